#pragma once
// What the views draw, read from a Trace (never recomputed from the model): one matrix with
// its row/column labels and mask, and the token labels as the views show them. Where the
// matrices come from: attention_heatmap.h (a map's head or aggregate), map_overview.h (maps
// computed on request), aggregate_heatmaps.h (rollout, flow, value-weighted),
// positional_data.h; how values become colours: value_mapper.h.
#include <QString>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas {
class Model;
}

namespace atlas::ui {

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
  // > 0: labels up to this many characters are drawn whole, beyond HeatmapStyle::maxLabelChars
  // (which suits tokens): names of model components ("layer11.attn_bias") must not be cut.
  int labelChars = 0;
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

// The label of output id `id` in `model`'s vocabulary, as `atlas run` prints it: the tokenizer's
// label, or "<id>" for an id past the tokenizer's vocabulary (an encoder-decoder model's BOS,
// a padded output layer), which the tokenizer refuses.
QString vocabularyLabel(const Model& model, int64_t id);

// Row and column labels of a map, by position (repeated tokens stay separate rows): the
// catalogue's token labels through displayLabel, memory keys marked with kMemoryKeyMark.
inline const QString kMemoryKeyMark = QStringLiteral("\u21BA ");
QStringList queryLabelsOf(const Trace& trace, const AttentionMap& map);
QStringList keyLabelsOf(const Trace& trace, const AttentionMap& map);

}  // namespace atlas::ui
