#pragma once
// What the views draw, read from a Trace (never recomputed from the model): one matrix with
// its row/column labels and mask, plus the colour mapping that turns values into colours.
#include <QString>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <vector>

#include "ui/views/colormap.h"
#include "core/model/trace.h"

namespace atlas::ui {

// One attention family of a trace, e.g. the encoder self-attention: the maps of the trace's
// attention-map catalogue (core/model/attention_map.h) with one stack and sub-layer. A map is
// chosen by layer (a Universal Transformer's step n is layer n - 1) and, for Transformer-XL, by
// segment.
struct AttentionFamily {
  QString stack;  // "encoder" | "decoder" | a model's own ("snail", "sagan")
  QString kind;   // the sub-layer: "attn" | "self_attn" | "cross_attn"
  int layers = 0;    // layers, or steps when `steps`
  int heads = 0;     // the most heads of any map
  int segments = 0;  // Transformer-XL segments; 0 = the model has none
  bool steps = false;  // Universal Transformer: layer index i is step i + 1
  int kvHeads = 0;     // grouped-query attention: query heads share kvHeads key/value heads
  bool grouped() const { return kvHeads > 0 && kvHeads < heads && heads % kvHeads == 0; }
  int groupOf(int head) const { return grouped() ? head / (heads / kvHeads) : head; }
  QString label() const;  // "encoder self-attention"
  QString layerWord() const { return steps ? "step" : "layer"; }
  int layerNumber(int layer) const { return steps ? layer + 1 : layer; }  // as the user reads it
  bool isSelfAttention() const { return kind != "cross_attn"; }
};

// Head selector values besides a head index >= 0.
// HeadSink is a model-grid column only (the attention sink per head, model_view.h), not a map.
enum HeadAggregate : int { HeadMean = -1, HeadMax = -2, HeadRollout = -3, HeadSink = -4, HeadFlow = -5 };
QString headName(int head);       // "head 3", "mean over heads", ...
QString headShortName(int head);  // "H3", "mean", "max", "rollout"

struct AttentionSelection {
  QString stack = "encoder";
  QString kind = "attn";
  int layer = 0;    // layer, or step - 1 for a step family
  int head = 0;     // >= 0 or a HeadAggregate
  int segment = 0;  // Transformer-XL segment; ignored by families without segments
};

// Families of the catalogue, grouped by stack and sub-layer in the order the maps were produced.
std::vector<AttentionFamily> attentionFamilies(const Trace& trace);
// The family of `stack`/`kind` in `families`, or nullptr.
const AttentionFamily* findFamily(const std::vector<AttentionFamily>& families, const QString& stack,
                                  const QString& kind);
// The catalogue entry `sel` names (stack, sub-layer, segment when the map has one, layer or
// step = layer + 1), or nullptr.
const AttentionMap* findAttentionMap(const Trace& trace, const AttentionSelection& sel);
// Its trace array ("decoder.seg1.layer0.self_attn"); throws AtlasError naming what is missing
// (and what the trace has) when there is no such map.
std::string attentionArrayName(const Trace& trace, const AttentionSelection& sel);
// Whether attention rollout applies to a family's maps in `segment`: self-attention whose
// queries and keys are the same tokens in every layer (not cross-attention, not XL memory).
bool rolloutApplies(const Trace& trace, const AttentionFamily& family, int segment);

// Row and column labels of a map, by position (repeated tokens stay separate rows): the
// catalogue's token labels through displayLabel, memory keys marked with kMemoryKeyMark.
inline const QString kMemoryKeyMark = QStringLiteral("\u21BA ");
QStringList queryLabelsOf(const Trace& trace, const AttentionMap& map);
QStringList keyLabelsOf(const Trace& trace, const AttentionMap& map);

struct HeatmapData;

// The exact cells of any part of a map too large to hold whole (an on-demand map,
// core/model/attention_on_demand.h, at long lengths), computed when a view zooms in.
class HeatmapDetail {
 public:
  virtual ~HeatmapDetail() = default;
  // Rows [r0, r1) x columns [c0, c1) of the full matrix, every cell exact, labelled, with
  // rowOrigin / colOrigin set.
  virtual HeatmapData window(int r0, int r1, int c0, int c1) const = 0;
};

struct HeatmapData {
  int rows = 0;
  int cols = 0;
  std::vector<float> values;  // [rows, cols]
  std::vector<uint8_t> mask;  // [rows, cols], 1 = allowed, 0 = masked; empty = all allowed
  QStringList rowLabels;      // rows entries
  QStringList colLabels;      // cols entries
  QString title;
  QString rowAxis;  // "query", "position"
  QString colAxis;  // "key", "dimension"
  QString valueName = "attention weight";  // colour bar title
  // Said instead of "no data" when there are no cells (e.g. while an overview is computed).
  QString emptyText;
  // > 0: the values are ids 0..categories-1 (LSH buckets), drawn in categoryColor with a
  // legend of the ids instead of a colour scale.
  int categories = 0;
  // Rows and columns marked by the token search (their labels drawn in its colours); empty =
  // none marked.
  std::vector<uint8_t> rowMarks, colMarks;

  // Where these cells lie in the full matrix (fullRows x fullCols; 0 = rows x cols): cell (r, c)
  // covers rows rowOrigin + r * rowStep .. + rowStep and likewise columns. An overview of a
  // map too large to hold has steps > 1 (each cell the largest weight of its block) and a
  // `detail` that computes exact windows; a window of it has steps 1 and its origin.
  int rowOrigin = 0, colOrigin = 0, rowStep = 1, colStep = 1, fullRows = 0, fullCols = 0;
  std::shared_ptr<const HeatmapDetail> detail;
  // > 0: the top of the colour scale instead of these cells' largest value (the whole map's
  // largest weight, so a window keeps the overview's colours).
  float valueMax = 0.0f;
  // An overview's attention sink (attention_sink of the full map: the mean weight on key 0 of
  // the rows that see a key), read while it was pooled; < 0 when not computed.
  double sink = -1.0;
  int totalRows() const { return fullRows > 0 ? fullRows : rows; }
  int totalCols() const { return fullCols > 0 ? fullCols : cols; }
  bool pooled() const { return rowStep > 1 || colStep > 1; }

  bool empty() const { return rows == 0 || cols == 0; }
  float at(int r, int c) const { return values[static_cast<size_t>(r) * cols + c]; }
  bool masked(int r, int c) const {
    return !mask.empty() && mask[static_cast<size_t>(r) * cols + c] == 0;
  }
  // 1-based rank of cell (r, c) among the unmasked cells of row r, largest first.
  int rankInRow(int r, int c) const;
};

// Token labels as shown in the views: whitespace made visible (" " -> U+2423, newline -> U+21B5,
// tab -> U+21E5), other control characters as their symbols (figureText: U+0001 -> U+2401),
// so every figure format shows them and an SVG can hold them; long labels elided.
QString displayLabel(const std::string& label);

// The [Lq, Lk] matrix of one map (findAttentionMap) and head or aggregate: the dense array's
// slice, a CSR-only map's nonzeros spread over masked cells, or an on-demand map's weights
// computed from its queries and keys; an on-demand map over kExactHeatmapCells comes as an
// overview of block maxima with a `detail` for exact windows. Throws AtlasError naming the
// missing map or head.
constexpr int64_t kExactHeatmapCells = int64_t(2048) * 2048;
// Whether attentionHeatmap gives head `head` (a head index, HeadMean or HeadMax) of `m` as an
// overview of block maxima: a map computed on request with more than kExactHeatmapCells cells.
bool heatmapIsOverview(const AttentionMap& m, int head);
HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel);
// The same; an overview of a map computed on request then shares the trace (its exact windows
// read the trace's queries and keys, keeping it alive) instead of copying them.
HeatmapData attentionHeatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel);
// The overviews attentionHeatmap gives for every head of sel's map, then for HeadMean and
// HeadMax, computed in one pass over the map; empty unless the map is computed on request and
// over kExactHeatmapCells. (The model grid's tiles of a long input.)
std::vector<HeatmapData> onDemandOverviews(const Trace& trace, const AttentionSelection& sel);
// Attention rollout (Abnar & Zuidema 2020) of sel's family and segment, layers 0..sel.layer.
HeatmapData rolloutHeatmap(const Trace& trace, const AttentionSelection& sel);
// Attention flow (core/analysis/attention_flow.h) of sel's family through layers 0..sel.layer,
// on the same residual-mixed layers as rollout; above kAttentionFlowFullLimit tokens only the
// decoder's last row or the encoder's first is computed (the other rows masked).
HeatmapData flowHeatmap(const Trace& trace, const AttentionSelection& sel);
// Value-weighted attention of one head (core/analysis/value_weighted.h): alpha_ij |f_h(x_j)|
// from a run traced with TraceOptions::value_norms.
HeatmapData valueWeightedHeatmap(const Trace& trace, const AttentionSelection& sel);
// The rollout of every prefix 0..l for l in [0, lastLayer], computed in one product chain.
std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const AttentionSelection& sel, int lastLayer);
HeatmapData positionalHeatmap(const Trace& trace);    // P [L, d]
HeatmapData positionalSimilarity(const Trace& trace);  // P P^T [L, L]

// Rollout maths on plain matrices (exposed for tests): `layers` are head-averaged [n, n]
// attention matrices, first layer first. Returns prod_l rownorm(0.5 A_l + 0.5 I), last first.
std::vector<float> attentionRollout(const std::vector<std::vector<float>>& layers, int n);
// The same, returning the product after every layer (element l = rollout up to layer l).
std::vector<std::vector<float>> attentionRolloutPrefixes(const std::vector<std::vector<float>>& layers,
                                                         int n);

// ---- value -> colour ----
enum class ColorScale { Linear, Log };
enum class Normalization { Global, Row };

struct ColorMapping {
  Colormap colormap = Colormap::Viridis;
  ColorScale scale = ColorScale::Linear;
  Normalization normalization = Normalization::Global;
  float logFloor = 1e-3f;  // log scale spans [floor * max, max]
  // Map [-m, m] -> [0, 1] even when no value is negative, so 0 keeps the diverging map's
  // neutral centre (differences and effects whose sign matters).
  bool centreZero = false;
  // > 0: the top of the (global) scale instead of the data's largest |value| (a grid's tiles
  // drawn on one shared scale).
  float fixedMax = 0.0f;
  // Grids of maps (the layers x heads view): every tile on one scale, the largest value of any
  // tile (fixedMax), instead of each tile on its own maximum.
  bool sharedScale = false;
};

// Maps the values of one HeatmapData to t in [0, 1]. Non-negative data maps [0, max] -> [0, 1];
// data with negative values maps symmetrically [-m, m] -> [0, 1] (0 at the centre), which is
// what the diverging colour map is for.
class ValueMapper {
 public:
  ValueMapper(const HeatmapData& data, const ColorMapping& mapping);
  float operator()(int r, int c) const;
  float map(float v, int row) const;
  bool signedData() const { return m_signed; }
  int categories() const { return m_data->categories; }
  float globalMax() const { return m_globalMax; }  // max |v| over unmasked cells
  // Tick values for the colour bar (in data units, or fractions of the row maximum) and the
  // bar position of each tick in [0, 1].
  struct Tick {
    float value;
    float position;
    QString text;
  };
  std::vector<Tick> colorBarTicks() const;
  QString colorBarTitle() const;

 private:
  const HeatmapData* m_data;
  ColorMapping m_mapping;
  bool m_signed = false;
  float m_globalMax = 0.0f;
  std::vector<float> m_rowMax;  // max |v| per row (row normalisation)
  float scaleOf(int row) const {
    return m_mapping.normalization == Normalization::Row ? m_rowMax[row] : m_globalMax;
  }
};

}  // namespace atlas::ui
