#include "ui/panels/variant_plots.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas::ui {

const Tensor& requireArray(const Trace& trace, const std::string& name) {
  const TracedArray* a = trace.find(name);
  if (!a) throw AtlasError("the trace has no array '" + name + "'");
  return a->tensor;
}

HeatmapData layersByHeads(int64_t layers, int64_t heads, bool steps, const std::vector<double>& values,
                          const QString& title, const QString& valueName) {
  HeatmapData d;
  d.rows = static_cast<int>(layers);
  d.cols = static_cast<int>(heads);
  d.values.assign(values.begin(), values.end());
  for (int l = 0; l < d.rows; ++l) d.rowLabels << (steps ? QString("S%1").arg(l + 1) : QString("L%1").arg(l));
  d.colLabels = indexLabels("H", d.cols);
  d.title = title;
  d.rowAxis = steps ? "step" : "layer";
  d.colAxis = "head";
  d.valueName = valueName;
  return d;
}

QStringList indexLabels(const QString& prefix, int n) {
  QStringList out;
  for (int i = 0; i < n; ++i) out << prefix + QString::number(i);
  return out;
}

QStringList tokenLabels(const Trace& trace, int n, bool target) {
  const auto& toks = target ? trace.target_tokens : trace.source_tokens;
  if (static_cast<int>(toks.size()) < n) return indexLabels(QString(), n);
  QStringList out;
  for (int i = 0; i < n; ++i) out << displayLabel(toks[static_cast<size_t>(i)].label);
  return out;
}

HeatmapData matrixFrom(const Tensor& t, size_t offset, int rows, int cols) {
  HeatmapData d;
  d.rows = rows;
  d.cols = cols;
  const size_t n = static_cast<size_t>(rows) * cols;
  if (offset + n > t.data.size()) throw AtlasError("a traced array is smaller than its shape says");
  d.values.assign(t.data.begin() + static_cast<std::ptrdiff_t>(offset),
                  t.data.begin() + static_cast<std::ptrdiff_t>(offset + n));
  return d;
}

std::vector<std::string> arraysEndingWith(const Trace& trace, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& a : trace.arrays)
    if (a.name.size() >= suffix.size() &&
        a.name.compare(a.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(a.name);
  return out;
}

HeatmapData headSlice(const Tensor& t, int head) {
  if (t.shape.size() != 3) throw AtlasError("expected an array of shape [heads, Lq, Lk]");
  const int heads = static_cast<int>(t.shape[0]), lq = static_cast<int>(t.shape[1]),
            lk = static_cast<int>(t.shape[2]);
  const size_t n = static_cast<size_t>(lq) * lk;
  if (head >= 0) return matrixFrom(t, static_cast<size_t>(std::min(head, heads - 1)) * n, lq, lk);
  HeatmapData d = matrixFrom(t, 0, lq, lk);
  for (int h = 1; h < heads; ++h)
    for (size_t k = 0; k < n; ++k) d.values[k] += t.data[static_cast<size_t>(h) * n + k];
  for (float& v : d.values) v /= static_cast<float>(heads);
  return d;
}

}  // namespace atlas::ui
