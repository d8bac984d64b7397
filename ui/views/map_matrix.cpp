#include "ui/views/map_matrix.h"

#include <algorithm>

#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"

namespace atlas::ui {

const TracedArray& requireTraced(const Trace& trace, const std::string& name) {
  const TracedArray* a = trace.find(name);
  if (!a) throw AtlasError("the trace has no array '" + name + "' (this model does not record it)");
  return *a;
}

std::vector<float> mapHead(const Trace& trace, const AttentionMap& m, int64_t h, std::vector<uint8_t>* allowed) {
  const int64_t lq = m.queries.count, lk = m.keys.count;
  if (m.on_demand && !m.dense) {  // computed from the traced queries and keys
    if (lq * lk > kMaxDensifiedCells)
      throw AtlasError("'" + m.array + "' is " + std::to_string(lq) + " x " + std::to_string(lk) +
                       " (computed on request): too large to hold whole");
    const OnDemandMap od(trace, m);
    if (allowed)
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) (*allowed)[size_t(i * lk + j)] = od.allowed(i, j) ? 1 : 0;
    return od.rows(h, 0, lq);
  }
  if (m.dense) {
    const TracedArray& a = requireTraced(trace, m.array);
    if (a.tensor.shape != Shape{m.heads, lq, lk})
      throw AtlasError("array '" + m.array + "' has shape " + shape_str(a.tensor.shape) + ", its description [" +
                       std::to_string(m.heads) + ", " + std::to_string(lq) + ", " + std::to_string(lk) + "]");
    const auto first = a.tensor.data.begin() + h * lq * lk;
    return std::vector<float>(first, first + lq * lk);
  }
  if (lq * lk > kMaxDensifiedCells)
    throw AtlasError("'" + m.array + "' is " + std::to_string(lq) + " x " + std::to_string(lk) +
                     " (traced sparse only): too large for a heatmap; the Pattern view draws its connectivity");
  const Tensor& indptr = requireTraced(trace, m.companions.indptr).tensor;    // [Lq + 1]
  const Tensor& indices = requireTraced(trace, m.companions.indices).tensor;  // [nnz]
  const Tensor& values = requireTraced(trace, m.companions.values).tensor;    // [heads, nnz]
  const TracedArray* own = trace.find(m.companions.allowed);                 // [heads, nnz]
  const int64_t nnz = indices.numel();
  if (indptr.numel() != lq + 1 || values.shape != Shape{m.heads, nnz} || (own && own->tensor.shape != values.shape))
    throw AtlasError("the CSR arrays of '" + m.array + "' do not match " + std::to_string(lq) + " queries and " +
                     std::to_string(m.heads) + " heads");
  std::vector<float> out(static_cast<size_t>(lq * lk), 0.0f);
  for (int64_t i = 0; i < lq; ++i)
    for (auto k = static_cast<int64_t>(indptr.data[size_t(i)]); k < static_cast<int64_t>(indptr.data[size_t(i + 1)]); ++k) {
      const int64_t j = k >= 0 && k < nnz ? static_cast<int64_t>(indices.data[size_t(k)]) : -1;
      if (j < 0 || j >= lk)
        throw AtlasError("the CSR arrays of '" + m.array + "' point outside [" + std::to_string(lq) + ", " +
                         std::to_string(lk) + "]");
      if (own && own->tensor.data[size_t(h * nnz + k)] == 0.0f) continue;  // another head's nonzero
      out[size_t(i * lk + j)] = values.data[size_t(h * nnz + k)];
      if (allowed) (*allowed)[size_t(i * lk + j)] = 1;
    }
  return out;
}

std::vector<float> mapHeadMean(const Trace& trace, const AttentionMap& m) {
  std::vector<float> out(static_cast<size_t>(m.queries.count * m.keys.count), 0.0f);
  for (int64_t h = 0; h < m.heads; ++h) {
    const std::vector<float> a = mapHead(trace, m, h, nullptr);
    for (size_t i = 0; i < out.size(); ++i) out[i] += a[i];
  }
  for (auto& v : out) v /= static_cast<float>(std::max<int64_t>(1, m.heads));
  return out;
}

void setMapLabels(HeatmapData& d, const Trace& trace, const AttentionMap& m) {
  d.rowLabels = queryLabelsOf(trace, m);
  d.colLabels = keyLabelsOf(trace, m);
  d.rowAxis = "query";
  d.colAxis = "key";
}

void copyMask(HeatmapData& d, const Trace& trace, const std::string& maskName) {
  const TracedArray* m = maskName.empty() ? nullptr : trace.find(maskName);
  if (!m || m->tensor.numel() != static_cast<int64_t>(d.rows) * d.cols) return;
  d.mask.resize(m->tensor.data.size());
  for (size_t i = 0; i < d.mask.size(); ++i) d.mask[i] = m->tensor.data[i] != 0.0f ? 1 : 0;
}
}  // namespace atlas::ui
