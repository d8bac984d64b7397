#pragma once
// The weights of a catalogued attention map, row by row, however the trace holds them: all keys
// of a dense [heads, Lq, Lk] array, the nonzeros of the CSR arrays (sparse and LSH maps beyond
// their dense copies; key indices stored as floats, ascending), or rows computed on request from
// the traced queries and keys (core/model/attention_on_demand.h). For the analyses that read
// weights (corpus, token search, comparison, head statistics), so they work on all three.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/attention_on_demand.h"
#include "core/model/trace.h"

namespace atlas {

struct RowWeights {
  const float* weights = nullptr;
  const float* keys = nullptr;  // nullptr: weight t is key t
  int64_t count = 0;
  int64_t key(int64_t t) const { return keys ? static_cast<int64_t>(keys[t]) : t; }
};

class StoredRows {
 public:
  // Throws AtlasError when the map's arrays are missing or do not have its shape.
  StoredRows(const Trace& trace, const AttentionMap& m);
  // Whether the trace holds weights for `m` (dense, CSR, or queries and keys to compute them).
  static bool stored(const AttentionMap& m) { return m.dense || m.csr || m.on_demand; }
  int64_t heads() const { return heads_; }
  int64_t queries() const { return lq_; }
  int64_t keys() const { return lk_; }
  // An on-demand map's row stays valid until the next call (rows are computed a chunk at a
  // time, so reading them in order costs one pass over the map).
  RowWeights row(int64_t head, int64_t query) const;

 private:
  int64_t heads_ = 0, lq_ = 0, lk_ = 0, nnz_ = 0;
  const Tensor* dense_ = nullptr;
  const Tensor *indptr_ = nullptr, *indices_ = nullptr, *values_ = nullptr;
  std::unique_ptr<OnDemandMap> on_demand_;
  mutable int64_t chunk_head_ = -1, chunk_r0_ = 0, chunk_rows_ = 0;
  mutable std::vector<float> chunk_;  // rows [chunk_r0_, + chunk_rows_) of chunk_head_
};

}  // namespace atlas
