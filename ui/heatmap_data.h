#pragma once
// What the views draw, read from a Trace (never recomputed from the model): one matrix with
// its row/column labels and mask, plus the colour mapping that turns values into colours.
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "colormap.h"
#include "trace.h"

namespace atlas::ui {

// One attention family of a trace, e.g. the encoder self-attention: arrays named
// "<stack>.layer<i>.<kind>" [heads, Lq, Lk] for i in [0, layers).
struct AttentionFamily {
  QString stack;  // "encoder" | "decoder"
  QString kind;   // "attn" | "self_attn" | "cross_attn"
  int layers = 0;
  int heads = 0;
  QString label() const;  // "encoder self-attention"
  bool isSelfAttention() const { return kind != "cross_attn"; }
};

// Families in the order the trace recorded them.
std::vector<AttentionFamily> attentionFamilies(const Trace& trace);
std::string attentionArrayName(const QString& stack, const QString& kind, int layer);

// Head selector values besides a head index >= 0.
enum HeadAggregate : int { HeadMean = -1, HeadMax = -2, HeadRollout = -3 };
QString headName(int head);       // "head 3", "mean over heads", ...
QString headShortName(int head);  // "H3", "mean", "max", "rollout"

struct AttentionSelection {
  QString stack = "encoder";
  QString kind = "attn";
  int layer = 0;
  int head = 0;  // >= 0 or a HeadAggregate
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

  bool empty() const { return rows == 0 || cols == 0; }
  float at(int r, int c) const { return values[static_cast<size_t>(r) * cols + c]; }
  bool masked(int r, int c) const {
    return !mask.empty() && mask[static_cast<size_t>(r) * cols + c] == 0;
  }
  // 1-based rank of cell (r, c) among the unmasked cells of row r, largest first.
  int rankInRow(int r, int c) const;
};

// Token labels as shown in the views: whitespace made visible, long labels elided.
QString displayLabel(const std::string& label);

// The [Lq, Lk] matrix of one layer and head (or aggregate). Throws AtlasError naming the
// missing array when the trace does not hold it.
HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel);
// Attention rollout (Abnar & Zuidema 2020) up to and including `layer`.
HeatmapData rolloutHeatmap(const Trace& trace, const QString& stack, const QString& kind,
                           int layer);
// The rollout of every prefix 0..l for l in [0, lastLayer], computed in one product chain.
std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const QString& stack,
                                         const QString& kind, int lastLayer);
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
