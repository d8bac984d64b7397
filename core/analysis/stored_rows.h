#pragma once
// The stored weights of a catalogued attention map, row by row, however the trace holds them:
// all keys of a dense [heads, Lq, Lk] array, or the nonzeros of the CSR arrays (sparse and LSH
// maps beyond their dense copies; key indices stored as floats, ascending). For the analyses
// that read weights (corpus, token search, comparison), so they work on both.
#include <cstdint>

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
  // Whether the trace stores weights for `m` (dense or CSR).
  static bool stored(const AttentionMap& m) { return m.dense || m.csr; }
  int64_t heads() const { return heads_; }
  int64_t queries() const { return lq_; }
  int64_t keys() const { return lk_; }
  RowWeights row(int64_t head, int64_t query) const;

 private:
  int64_t heads_ = 0, lq_ = 0, lk_ = 0, nnz_ = 0;
  const Tensor* dense_ = nullptr;
  const Tensor *indptr_ = nullptr, *indices_ = nullptr, *values_ = nullptr;
};

}  // namespace atlas
