// Comparison views of two runs (compare_view.h).
#include "ui/tools/compare_view.h"

#include "core/tensor/error.h"
#include "ui/panels/variant_plots.h"
#include "ui/views/attention_heatmap.h"

namespace atlas::ui {

namespace {

QString familyName(const Trace& t, const AttentionSelection& sel) {
  const AttentionMap* m = findAttentionMap(t, sel);
  return m ? QString::fromStdString(attention_map_title(*m)) : sel.stack + " " + sel.kind;
}

void requireSameShape(const HeatmapData& a, const HeatmapData& b) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw AtlasError("A's map is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) + " but B's is " +
                     std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": the difference needs inputs with the same number of tokens");
}

QStringList mergedLabels(const QStringList& a, const QStringList& b) {
  QStringList out;
  for (int i = 0; i < a.size(); ++i) out << (i < b.size() && b[i] != a[i] ? a[i] + "|" + b[i] : a[i]);
  return out;
}

}  // namespace

HeatmapData compareDifference(const Trace& a, const Trace& b, const AttentionSelection& sel) {
  const HeatmapData A = attentionHeatmap(a, sel);
  const HeatmapData B = attentionHeatmap(b, sel);
  // Overviews hold block maxima: their difference is not the maps' difference.
  if (A.pooled() || B.pooled())
    throw AtlasError("the maps are over 2048 x 2048 and computed on request: their difference is not drawn "
                     "(atlas compare computes it exactly, row by row)");
  requireSameShape(A, B);
  HeatmapData d = A;
  for (size_t k = 0; k < d.values.size(); ++k) d.values[k] = A.values[k] - B.values[k];
  if (!B.mask.empty()) {
    if (d.mask.empty()) d.mask.assign(d.values.size(), 1);
    for (size_t k = 0; k < d.mask.size(); ++k) d.mask[k] = d.mask[k] && B.mask[k];
  }
  d.rowLabels = mergedLabels(A.rowLabels, B.rowLabels);
  d.colLabels = mergedLabels(A.colLabels, B.colLabels);
  d.title = "A \u2212 B: " + familyName(a, sel) + ", " + headName(sel.head);
  d.valueName = "A \u2212 B attention weight";
  return d;
}

HeatmapData compareSideBySide(const Trace& a, const Trace& b, const AttentionSelection& sel) {
  const HeatmapData A = attentionHeatmap(a, sel);
  const HeatmapData B = attentionHeatmap(b, sel);
  if (A.rows != B.rows)
    throw AtlasError("A has " + std::to_string(A.rows) + " queries but B " + std::to_string(B.rows) +
                     ": side by side needs the same number of query tokens");
  HeatmapData s;
  s.rows = A.rows;
  s.cols = A.cols + 1 + B.cols;
  s.values.assign(size_t(s.rows) * size_t(s.cols), 0.0f);
  s.mask.assign(s.values.size(), 1);
  for (int r = 0; r < s.rows; ++r) {
    for (int c = 0; c < A.cols; ++c) {
      s.values[size_t(r) * s.cols + c] = A.at(r, c);
      s.mask[size_t(r) * s.cols + c] = !A.masked(r, c);
    }
    s.mask[size_t(r) * s.cols + A.cols] = 0;  // the separator
    for (int c = 0; c < B.cols; ++c) {
      s.values[size_t(r) * s.cols + A.cols + 1 + c] = B.at(r, c);
      s.mask[size_t(r) * s.cols + A.cols + 1 + c] = !B.masked(r, c);
    }
  }
  s.rowLabels = mergedLabels(A.rowLabels, B.rowLabels);
  for (const QString& l : A.colLabels) s.colLabels << "A " + l;
  s.colLabels << "";
  for (const QString& l : B.colLabels) s.colLabels << "B " + l;
  s.title = "A | B: " + familyName(a, sel) + ", " + headName(sel.head);
  s.rowAxis = A.rowAxis;
  s.colAxis = "key (A, then B)";
  s.valueName = A.valueName;
  return s;
}

HeatmapData compareHeadGrid(const Trace& a, const Trace& b, const AttentionSelection& sel) {
  const AttentionMap* m = findAttentionMap(a, sel);
  if (!m) throw AtlasError("A has no " + sel.stack.toStdString() + " " + sel.kind.toStdString() + " map");
  for (const HeadTable& t : head_difference_tables(compare_attention(a, b))) {
    if (t.map.stack != m->stack || t.map.sublayer != m->sublayer || t.map.segment != m->segment) continue;
    return layersByHeads(t.layers, t.heads, t.steps, t.values,
                         "A vs B per head: " + QString::fromStdString(attention_family_label(t.map)) +
                             (t.map.segment >= 0 ? QString(", segment %1").arg(t.map.segment) : QString()),
                         "mean total variation distance");
  }
  throw AtlasError("the " + attention_family_label(*m) + " maps of A and B cannot be compared (other token counts)");
}

ColorMapping compareDifferenceMapping() { return signedEffectMapping(); }

}  // namespace atlas::ui
