#pragma once
// The connectivity pattern of the loaded model's attention, as the pattern view draws it.
// Sparse configs (strided, fixed, local 1D/2D) come from core/variants/sparse/sparse_pattern.h at any length
// as density tiles (pattern_tile), never as a dense L x L matrix; every other model reads the
// allowed keys from its trace (the `.mask` arrays: full, causal, padding; the CSR `.allowed`
// of LSH; `.span.mask` > 0 for adaptive spans).
#include <QString>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "core/model/model.h"

namespace atlas::ui {

struct PatternSummary {
  int64_t length = 0;  // queries
  int64_t keys = 0;    // key columns
  int64_t nnz = 0;     // allowed (query, key) pairs
  int64_t minRow = 0, maxRow = 0;
  double density = 0;  // nnz / (length * keys)
  double meanRow = 0;  // keys per query
  QString source;      // what the pattern was read from, e.g. "sparse.pattern strided"
};

struct PatternImage {
  HeatmapData tile;  // fraction of allowed cells per pixel, [rows, cols]
  int64_t zoom = 1;  // cells per pixel side
  PatternSummary stats;
};

// Tile window in cells: the pixel (y, x) covers rows [(r0/zoom + y) zoom, ...) as pattern_tile.
struct PatternWindow {
  int64_t length = 0;  // sequence length (0 = the run's length)
  int64_t r0 = 0, c0 = 0;  // first row / column, in cells (rounded down to the zoom)
  int64_t zoom = 0;    // 0 = fit the whole length into `side` pixels
  int64_t side = 512;  // pixels per tile side at most
};

bool hasConfigPattern(const ModelConfig& c);
// Sparse config pattern of one layer and head at any length; exact statistics.
PatternImage configPattern(const ModelConfig& c, const PatternWindow& w, int layer, int head, bool causal);
// The pattern recorded in the trace for `sel` (head < 0: union over heads). Throws AtlasError
// naming the missing array.
PatternImage tracePattern(const Trace& trace, const AttentionSelection& sel);
// Counts a dense allowed matrix (1 = allowed) of [rows, cols].
PatternSummary countAllowed(const std::vector<uint8_t>& allowed, int64_t rows, int64_t cols);

// Image models (local2d or any sparse config with an image width): the positions are pixels
// of an image `width` wide in raster order. Returns the [H, width] grid of query `q`'s
// attention weights (from `attention` [Lq, Lk], one head), masked where the pattern forbids.
int64_t imageWidth(const ModelConfig& c);  // 0 = not an image model
// Row `query` of the config pattern (1 = allowed) at `length`.
std::vector<uint8_t> configAllowedRow(const ModelConfig& c, int64_t length, int layer, int head, bool causal,
                                      int64_t query);
HeatmapData pixelOverlay(const HeatmapData& attention, const std::vector<uint8_t>& allowedRow, int64_t width,
                         int64_t query);

}  // namespace atlas::ui
