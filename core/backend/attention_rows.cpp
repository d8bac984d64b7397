#include "core/backend/attention_rows.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/backend/cpu_gemm.h"

namespace atlas {

namespace {

const float kInf = std::numeric_limits<float>::infinity();

// exp(x - mx) over row[0, n) in place, exactly 0 where x is -inf; returns the sum. The span is copied into a SIMD-
// aligned buffer padded with -inf to a multiple of 16, so every element goes through the same
// vectorised exp wherever the row lies in memory (on an unaligned row Eigen computes the first
// and last few elements with the scalar exp, which rounds differently) and the sum's order
// depends only on n. Faster than exp in place, too: no peeled scalar elements.
float exp_shifted_in_place(float* row, int64_t n, float mx) {
  thread_local std::vector<float, Eigen::aligned_allocator<float>> buffer;
  const int64_t padded = (n + 15) / 16 * 16;
  if (static_cast<int64_t>(buffer.size()) < padded) buffer.resize(static_cast<size_t>(padded));
  std::copy(row, row + n, buffer.data());
  std::fill(buffer.data() + n, buffer.data() + padded, -kInf);  // exp(-inf) = 0 adds nothing
  // aligned_allocator aligns to EIGEN_MAX_ALIGN_BYTES: 64 with AVX-512, 32 with AVX2.
  Eigen::Map<Eigen::ArrayXf, Eigen::AlignedMax> chunk(buffer.data(), padded);
  chunk = (chunk - mx).exp();
  // A masked key (-inf) must weigh exactly 0: Eigen's vectorised exp clamps its argument at
  // about -88.4 and returns a denormal (~1e-39) for -inf on AVX2, not 0.
  for (int64_t j = 0; j < n; ++j)
    if (row[j] == -kInf) buffer[size_t(j)] = 0.0f;
  std::fill(buffer.data() + n, buffer.data() + padded, 0.0f);
  const float sum = chunk.sum();
  std::copy(buffer.data(), buffer.data() + n, row);
  return sum;
}

}  // namespace

std::pair<int64_t, int64_t> causal_span(const AttentionMask& m, int64_t i, int64_t lk) {
  if (!m.causal) return {0, lk};
  const int64_t last = i + m.causal_offset;  // the query's own position among the keys
  const int64_t hi = std::clamp<int64_t>(last + 1, 0, lk);
  const int64_t lo = m.window > 0 ? std::clamp<int64_t>(last - m.window + 1, 0, hi) : 0;
  return {lo, hi};
}

KeyBlock attention_key_block_of(const AttentionMask& m, int64_t lq, int64_t lk, int64_t i) {
  const bool one_block = lq < 2 * kAttentionBlockRows;
  const int64_t r0 = one_block ? 0 : i / kAttentionBlockRows * kAttentionBlockRows;
  const int64_t rows = one_block ? lq : std::min(kAttentionBlockRows, lq - r0);
  // Spans only grow with i: the block's keys run from its first row's lo to its last row's hi.
  const int64_t k0 = causal_span(m, r0, lk).first, k1 = causal_span(m, r0 + rows - 1, lk).second;
  return {r0, rows, k0, std::max(k0, k1)};
}

std::vector<KeyBlock> attention_key_blocks(const AttentionMask& m, int64_t lq, int64_t lk) {
  std::vector<KeyBlock> out;
  for (int64_t r0 = 0; r0 < lq;) {
    out.push_back(attention_key_block_of(m, lq, lk, r0));
    r0 += out.back().rows;
  }
  return out;
}

void attention_block(const HeadRows& q, const HeadRows& k, const AttentionMask& mask, float scale,
                     const KeyBlock& b, float* probs, float* scores) {
  const int64_t lk = k.rows();
  MatMap P(probs, b.rows, lk);
  if (b.k1 > b.k0) {
    // The product straight into P, then scaled in place. The packed kernel gives each score the
    // same value whatever the block's shape (cpu_gemm.h), as Eigen does for these fixed shapes.
    const int64_t dk = q.cols();
    cpu_gemm::multiply(b.rows, b.k1 - b.k0, dk, {q.data() + b.r0 * q.outerStride(), q.outerStride(), 1},
                       {k.data() + b.k0 * k.outerStride(), 1, k.outerStride()}, probs + b.k0, lk);
    P.middleCols(b.k0, b.k1 - b.k0) *= scale;
  }
  const bool per_key_mask = !mask.key_valid.empty() || !mask.allowed.empty();
  for (int64_t t = 0; t < b.rows; ++t) {
    const int64_t i = b.r0 + t;
    const auto [lo, hi] = causal_span(mask, i, lk);
    float* row = probs + t * lk;
    // Keys outside the causal / sliding-window span are masked as a block, the per-key
    // constraints (padding, patterns) inside it; half of a causal map is never exponentiated.
    std::fill(row, row + lo, -kInf);
    std::fill(row + hi, row + lk, -kInf);
    if (per_key_mask)
      for (int64_t j = lo; j < hi; ++j)
        if (!mask.is_allowed(i, j, lk)) row[j] = -kInf;
    if (scores) std::copy(row, row + lk, scores + t * lk);
    // The maximum and the division are exact whatever the order and vector width.
    Eigen::Map<Eigen::ArrayXf> span(row + lo, hi - lo);
    const float mx = hi > lo ? span.maxCoeff() : -kInf;
    if (mx == -kInf) {  // no allowed key: the row attends to nothing
      std::fill(row, row + lk, 0.0f);
      continue;
    }
    span /= exp_shifted_in_place(row + lo, hi - lo, mx);
    std::fill(row, row + lo, 0.0f);
    std::fill(row + hi, row + lk, 0.0f);
  }
}

}  // namespace atlas
