#include "core/variants/adaptive_span/span_arrays.h"
#include "ui/views/pattern_data.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/variants/sparse/sparse_pattern.h"
#include "ui/panels/variant_plots.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

bool hasConfigPattern(const ModelConfig& c) { return c.sparse() != nullptr; }

int64_t imageWidth(const ModelConfig& c) {
  return c.sparse() && c.sparse()->pattern == SparsePattern::Local2D ? c.sparse()->image_width : 0;
}

PatternSummary countAllowed(const std::vector<uint8_t>& allowed, int64_t rows, int64_t cols) {
  PatternSummary s;
  s.length = rows;
  s.keys = cols;
  s.minRow = cols;
  for (int64_t i = 0; i < rows; ++i) {
    int64_t n = 0;
    for (int64_t j = 0; j < cols; ++j) n += allowed[static_cast<size_t>(i * cols + j)] != 0;
    s.nnz += n;
    s.minRow = std::min(s.minRow, n);
    s.maxRow = std::max(s.maxRow, n);
  }
  if (rows == 0) s.minRow = 0;
  s.density = rows && cols ? double(s.nnz) / (double(rows) * double(cols)) : 0.0;
  s.meanRow = rows ? double(s.nnz) / double(rows) : 0.0;
  return s;
}

namespace {
const SparseConfig& sparsePatternOf(const ModelConfig& c) {
  if (!c.sparse()) throw AtlasError("model \"" + c.name + "\" has no sparse pattern");
  return *c.sparse();
}
}  // namespace

PatternImage configPattern(const ModelConfig& c, const PatternWindow& w, int layer, int head, bool causal) {
  const SparseConfig& sparse = sparsePatternOf(c);
  if (w.length < 1) throw AtlasError("the pattern length must be at least 1");
  PatternRows rows(sparse, w.length, layer, head, causal);
  PatternImage out;
  const PatternStats st = pattern_stats(rows);
  out.stats.length = st.length;
  out.stats.keys = st.length;
  out.stats.nnz = st.nnz;
  out.stats.minRow = st.min_row;
  out.stats.maxRow = st.max_row;
  out.stats.density = st.density;
  out.stats.meanRow = double(st.nnz) / double(st.length);
  static const char* names[] = {"none", "strided", "fixed", "local1d", "local1d_unmasked", "local2d"};
  out.stats.source = QString("sparse.pattern %1, layer %2, head %3")
                         .arg(names[static_cast<int>(sparse.pattern)])
                         .arg(layer)
                         .arg(head);
  TileRequest t;
  const int64_t side = std::clamp<int64_t>(w.side, 1, kMaxTileSide);
  t.zoom = w.zoom > 0 ? w.zoom : std::max<int64_t>(1, (w.length + side - 1) / side);
  t.r0 = std::clamp<int64_t>(w.r0 / t.zoom, 0, (w.length - 1) / t.zoom);
  t.c0 = std::clamp<int64_t>(w.c0 / t.zoom, 0, (w.length - 1) / t.zoom);
  const int64_t pixels = (w.length + t.zoom - 1) / t.zoom;
  t.rows = std::min(side, pixels - t.r0);
  t.cols = std::min(side, pixels - t.c0);
  const Tensor tile = pattern_tile(rows, t);
  out.zoom = t.zoom;
  HeatmapData& d = out.tile;
  d.rows = static_cast<int>(t.rows);
  d.cols = static_cast<int>(t.cols);
  d.values.assign(tile.data.begin(), tile.data.end());
  for (int64_t y = 0; y < t.rows; ++y) d.rowLabels << QString::number((t.r0 + y) * t.zoom);
  for (int64_t x = 0; x < t.cols; ++x) d.colLabels << QString::number((t.c0 + x) * t.zoom);
  d.title = QString("connectivity, %1, L %2%3").arg(out.stats.source).arg(w.length)
                .arg(t.zoom > 1 ? QString(", %1 cells per pixel").arg(t.zoom) : QString());
  d.rowAxis = "query";
  d.colAxis = "key";
  d.valueName = t.zoom > 1 ? "allowed fraction" : "allowed";
  return out;
}

PatternImage tracePattern(const Trace& trace, const AttentionSelection& sel) {
  const std::string name = attentionArrayName(trace, sel);  // throws naming what is missing
  const AttentionMap& map = *trace.attention_map(name);
  PatternImage out;
  std::vector<uint8_t> allowed;
  int64_t rows = 0, cols = 0;
  const TracedArray* span = trace.find(span_arrays::mask(name));
  const TracedArray* csr = trace.find(map.companions.indptr);
  const TracedArray* mask = trace.find(map.companions.mask);
  const TracedArray* attn = trace.find(name);
  if (span && span->tensor.shape.size() == 3) {  // adaptive span: keys with m_z > 0
    const Tensor& t = span->tensor;
    const int64_t heads = t.shape[0];
    rows = t.shape[1];
    cols = t.shape[2];
    allowed.assign(static_cast<size_t>(rows * cols), 0);
    for (int64_t h = 0; h < heads; ++h) {
      if (sel.head >= 0 && h != sel.head) continue;
      for (int64_t k = 0; k < rows * cols; ++k)
        if (t.data[static_cast<size_t>(h * rows * cols + k)] > 0.0f) allowed[static_cast<size_t>(k)] = 1;
    }
    out.stats.source = "span mask m_z > 0 (" + QString::fromStdString(name) + ".span.mask)";
  } else if (csr) {  // sparse / LSH: the CSR union, restricted to the head's own nonzeros
    const Tensor& indptr = csr->tensor;
    const Tensor& indices = requireArray(trace, map.companions.indices);
    const TracedArray* own = trace.find(map.companions.allowed);  // [heads, nnz]
    rows = cols = indptr.shape[0] - 1;
    if (rows > 4096) throw AtlasError("the pattern of " + std::to_string(rows) + " positions is too large to draw from the trace");
    allowed.assign(static_cast<size_t>(rows * cols), 0);
    const int64_t nnz = static_cast<int64_t>(indices.data.size());
    for (int64_t i = 0; i < rows; ++i)
      for (auto k = static_cast<int64_t>(indptr.data[static_cast<size_t>(i)]); k < static_cast<int64_t>(indptr.data[static_cast<size_t>(i + 1)]); ++k) {
        if (own && sel.head >= 0 && own->tensor.data[static_cast<size_t>(sel.head * nnz + k)] == 0.0f) continue;
        allowed[static_cast<size_t>(i * cols + static_cast<int64_t>(indices.data[static_cast<size_t>(k)]))] = 1;
      }
    out.stats.source = "CSR " + QString::fromStdString(map.companions.indptr + ", " + map.companions.indices);
  } else if (mask && mask->tensor.shape.size() == 2) {
    rows = mask->tensor.shape[0];
    cols = mask->tensor.shape[1];
    allowed.resize(mask->tensor.data.size());
    for (size_t k = 0; k < allowed.size(); ++k) allowed[k] = mask->tensor.data[k] != 0.0f;
    out.stats.source = QString::fromStdString(map.companions.mask);
  } else if (attn && attn->tensor.shape.size() == 3) {  // no mask recorded: full attention
    rows = attn->tensor.shape[1];
    cols = attn->tensor.shape[2];
    allowed.assign(static_cast<size_t>(rows * cols), 1);
    out.stats.source = "full attention (no mask recorded)";
  } else {
    throw AtlasError("the trace has no attention or mask named '" + name + "'");
  }
  const QString source = out.stats.source;
  out.stats = countAllowed(allowed, rows, cols);
  out.stats.source = source;
  HeatmapData& d = out.tile;
  d.rows = static_cast<int>(rows);
  d.cols = static_cast<int>(cols);
  d.values.assign(allowed.begin(), allowed.end());
  // Labels by position from the catalogue (an XL segment's rows start at its first token).
  const QStringList q = queryLabelsOf(trace, map), k = keyLabelsOf(trace, map);
  for (int64_t i = 0; i < rows; ++i) d.rowLabels << (i < q.size() ? q[static_cast<int>(i)] : QString::number(i));
  for (int64_t j = 0; j < cols; ++j) d.colLabels << (j < k.size() ? k[static_cast<int>(j)] : QString::number(j));
  d.title = QString("connectivity, %1, %2").arg(source, headName(sel.head < 0 ? HeadMean : sel.head));
  if (sel.head < 0) d.title = QString("connectivity, %1, union of heads").arg(source);
  d.rowAxis = "query";
  d.colAxis = "key";
  d.valueName = "allowed";
  return out;
}

std::vector<uint8_t> configAllowedRow(const ModelConfig& c, int64_t length, int layer, int head, bool causal,
                                      int64_t query) {
  PatternRows rows(sparsePatternOf(c), length, layer, head, causal);
  std::vector<KeyRun> runs;
  rows.row(query, runs);
  std::vector<uint8_t> out(static_cast<size_t>(length), 0);
  for (const KeyRun& r : runs)
    for (int64_t j = std::max<int64_t>(0, r.lo); j < std::min(r.hi, length); ++j)
      if (r.count_in(j, j + 1) > 0) out[static_cast<size_t>(j)] = 1;
  return out;
}

HeatmapData pixelOverlay(const HeatmapData& attention, const std::vector<uint8_t>& allowedRow, int64_t width,
                         int64_t query) {
  if (width < 1) throw AtlasError("not an image model (no image width)");
  if (query < 0 || query >= attention.rows) throw AtlasError("query pixel " + std::to_string(query) + " is outside the image");
  const int64_t n = attention.cols;
  const int64_t height = (n + width - 1) / width;
  HeatmapData d;
  d.rows = static_cast<int>(height);
  d.cols = static_cast<int>(width);
  d.values.assign(static_cast<size_t>(height * width), 0.0f);
  d.mask.assign(static_cast<size_t>(height * width), 0);
  for (int64_t j = 0; j < n; ++j) {
    d.values[static_cast<size_t>(j)] = attention.at(static_cast<int>(query), static_cast<int>(j));
    d.mask[static_cast<size_t>(j)] = j < static_cast<int64_t>(allowedRow.size()) && allowedRow[static_cast<size_t>(j)] ? 1 : 0;
  }
  for (int64_t y = 0; y < height; ++y) d.rowLabels << QString::number(y);
  for (int64_t x = 0; x < width; ++x) d.colLabels << QString::number(x);
  d.title = QString("pixel (%1, %2) = position %3: keys it may see (grey: masked) and its attention")
                .arg(query / width).arg(query % width).arg(query);
  d.rowAxis = "image row";
  d.colAxis = "image column";
  return d;
}

}  // namespace atlas::ui
