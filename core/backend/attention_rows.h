#pragma once
// One head's scaled dot-product attention, computed block by block of query rows. The CPU
// backend's attention and the maps computed on request (core/model/attention_on_demand.h) both
// call attention_block with the blocks of attention_key_blocks, so a map computed again from the
// traced queries and keys equals the one the forward computed, bit for bit. The scores' product
// (cpu_gemm.h) gives every score the same value whatever the block's shape with AVX-512, but
// Eigen's product (its fallback elsewhere) rounds differently for other shapes, and Eigen's exp
// differently for unaligned elements: so the block shapes are fixed here and the exp runs on
// aligned chunks.
#include <Eigen/Core>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

// One head's rows of a [L, heads * d] array (row stride heads * d).
using HeadRows = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
inline HeadRows head_rows(const float* data, int64_t rows, int64_t head, int64_t d, int64_t heads) {
  return HeadRows(data + head * d, rows, d, Eigen::OuterStride<>(heads * d));
}

// Keys [lo, hi) that query i may see under the causal mask and its sliding window (all keys
// without causal); the per-key constraints of the mask apply inside this span.
std::pair<int64_t, int64_t> causal_span(const AttentionMask& m, int64_t i, int64_t lk);

// Query rows [r0, r0 + rows) and the keys [k0, k1) any of them can see.
struct KeyBlock {
  int64_t r0 = 0, rows = 0, k0 = 0, k1 = 0;
};
constexpr int64_t kAttentionBlockRows = 64;
// Blocks of kAttentionBlockRows rows from row 0 (one block for fewer than 128 rows).
std::vector<KeyBlock> attention_key_blocks(const AttentionMask& m, int64_t lq, int64_t lk);
// The block holding query row i (i < lq).
KeyBlock attention_key_block_of(const AttentionMask& m, int64_t lq, int64_t lk, int64_t i);

// Probabilities of block b for one head into probs [b.rows, lk] (row stride lk): a softmax over
// each row's allowed keys of scale * q_i . k_j, zero elsewhere; a row with no allowed key is all
// zero. `scores`, when not null, receives the scaled scores with -inf where masked.
void attention_block(const HeadRows& q, const HeadRows& k, const AttentionMask& mask, float scale,
                     const KeyBlock& b, float* probs, float* scores = nullptr);

}  // namespace atlas
