#pragma once
// Sparse attention in dense tiles: the same result as sparse_attention (sparse_attention.h, the
// per-nonzero host reference) computed sixteen rows at a time against blocks of sixteen keys
// (sparse_tile_kernel.h) instead of one dot product per nonzero. The rows of a head are processed
// in groups; a group packs the keys any of its rows sees (their union U) once, and each tile of
// 16 of its rows computes the 16-key blocks of U its rows touch, keeps each row's own nonzeros
// (softmax over them, zero elsewhere) and multiplies by the values. The rows of a group should
// see mostly the same keys: consecutive rows for block-local, banded and summary-column patterns
// (fixed, local, strided's window), the rows of one residue modulo the stride for strided's
// column factor. Per head, the grouping with the least estimated work is chosen
// (block_sparse_plan.h, which also keeps plans between calls); a group whose nonzeros fill less
// than kMinTileDensity of rows x |U| is computed per nonzero.
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas {

constexpr int64_t kMaxRowsPerGroup = 128;
constexpr double kMinTileDensity = 1.0 / 16;

// q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] -> [Lq, H*dv]; patterns: one CSR [Lq, Lk] per head.
// probs (optional): per head, the probabilities aligned with that head's CSR indices. Shapes are
// checked as sparse_attention checks them.
Tensor block_sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v, int heads, float scale,
                              const std::vector<CsrPattern>& patterns,
                              std::vector<std::vector<float>>* probs = nullptr);

// How block_sparse_attention groups one head's rows: group g is order[starts[g] .. starts[g+1]).
struct RowGrouping {
  std::vector<int64_t> order;
  std::vector<int64_t> starts;
  int64_t period = 0;      // 0: consecutive rows; else the rows of each residue modulo period
  // Score cells the tile kernel computes (nnz of them used): per tile of 16 rows, 16 x 16 for
  // each block of 16 columns of its group's union that one of its rows sees.
  int64_t tile_cells = 0;
  int64_t union_keys = 0;  // sum over groups of |U| (key and value rows gathered)
  // Group g's key union U, ascending: keys[key_begin[g] .. key_begin[g+1]); nnz[g]: the nonzeros
  // of its rows.
  std::vector<int32_t> keys;
  std::vector<int64_t> key_begin, nnz;
};
RowGrouping group_rows(const CsrPattern& pattern);

// A head's row groups as data, for kernels that take the plan from the host (the Vulkan
// backend's tile kernel): tile t is the rows rows[row_begin[t] .. row_begin[t+1]) (at most
// max_rows, groups of group_rows cut to fit) and the union of their keys, ascending,
// keys[key_begin[t] .. key_begin[t+1]). Every row is in exactly one tile (a tile of rows
// without keys has no keys).
struct SparseTiles {
  std::vector<int64_t> rows, row_begin;
  std::vector<int32_t> keys;
  std::vector<int64_t> key_begin;
  int64_t count() const { return int64_t(row_begin.size()) - 1; }
};
SparseTiles sparse_tiles(const CsrPattern& pattern, int64_t max_rows);

}  // namespace atlas
