#include "core/analysis/stored_rows.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas {

StoredRows::StoredRows(const Trace& trace, const AttentionMap& m)
    : heads_(m.heads), lq_(m.queries.count), lk_(m.keys.count) {
  auto array = [&](const std::string& name) -> const Tensor& {
    const TracedArray* a = trace.find(name);
    if (!a) throw AtlasError("the trace has no " + name + " array for " + m.array);
    return a->tensor;
  };
  if (m.dense) {
    dense_ = &array(m.array);
    if (dense_->shape != Shape{heads_, lq_, lk_})
      throw AtlasError(m.array + " has shape " + shape_str(dense_->shape) + ", its map is " +
                       shape_str({heads_, lq_, lk_}));
    return;
  }
  if (!m.csr && m.on_demand) {
    on_demand_ = std::make_unique<OnDemandMap>(trace, m);
    return;
  }
  if (!m.csr) throw AtlasError(m.array + " stores no weights (neither dense nor CSR nor queries and keys)");
  indptr_ = &array(m.companions.indptr);
  indices_ = &array(m.companions.indices);
  values_ = &array(m.companions.values);
  nnz_ = indices_->numel();
  if (indptr_->numel() != lq_ + 1 || values_->shape != Shape{heads_, nnz_})
    throw AtlasError(m.array + "'s CSR arrays do not fit its " + std::to_string(heads_) + " heads and " +
                     std::to_string(lq_) + " queries");
  for (int64_t i = 0; i <= lq_; ++i) {
    const float p = indptr_->data[size_t(i)];
    if (!(p >= 0 && p <= float(nnz_)) || (i > 0 && p < indptr_->data[size_t(i) - 1]))
      throw AtlasError(m.companions.indptr + " is not a row pointer into " + std::to_string(nnz_) + " nonzeros");
  }
  for (float j : indices_->data)
    if (!(j >= 0 && j < float(lk_))) throw AtlasError(m.companions.indices + " holds a key outside 0.." + std::to_string(lk_ - 1));
}

RowWeights StoredRows::row(int64_t h, int64_t i) const {
  if (dense_) return {dense_->data.data() + (h * lq_ + i) * lk_, nullptr, lk_};
  if (on_demand_) {
    if (h != chunk_head_ || i < chunk_r0_ || i >= chunk_r0_ + chunk_rows_) {
      constexpr int64_t kChunkRows = 256;  // a few attention blocks, computed in parallel
      chunk_head_ = h;
      chunk_r0_ = i / kChunkRows * kChunkRows;
      chunk_rows_ = std::min(kChunkRows, lq_ - chunk_r0_);
      chunk_ = on_demand_->rows(h, chunk_r0_, chunk_r0_ + chunk_rows_);
    }
    return {chunk_.data() + (i - chunk_r0_) * lk_, nullptr, lk_};
  }
  const auto begin = static_cast<int64_t>(indptr_->data[size_t(i)]);
  const auto end = static_cast<int64_t>(indptr_->data[size_t(i + 1)]);
  return {values_->data.data() + h * nnz_ + begin, indices_->data.data() + begin, end - begin};
}

}  // namespace atlas
