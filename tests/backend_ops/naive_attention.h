#pragma once
// The naive attention oracle: scores, masks, softmax and P V per head in double precision, with
// the error bound of a float32 implementation per element. The host reference of the attention
// op in the backend-ops harness (attention_op.cpp) and the oracle of the hand-written Vulkan
// attention tests (tests/gpu/test_vulkan_attention.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/tensor.h"
#include "tests/backend_ops/compare.h"

namespace atlas::op_test {

struct AttentionOracle {
  std::vector<double> out, probs, scores;
  std::vector<double> out_tol, score_tol;
};

// Naive attention. Bounds (derived, then checked to hold with margin on lavapipe):
//   scores: |err| <= (dh + 2) u scale sum_e |q_e k_e|            (a dh-term dot product)
//   probs:  |err| <= 1e-6                                         (|ds| <= ~1e-6, exp ulps)
//   out:    |err| <= 2e-6 max_j |v_j| + (Lk u) sum_j p_j |v_j|     (p error + the P V sum)
inline AttentionOracle attention_oracle(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& a) {
  const int64_t H = a.heads, lq = q.shape[0], lk = k.shape[0];
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H;
  AttentionOracle o;
  o.out.assign(lq * H * dv, 0.0);
  o.out_tol.assign(lq * H * dv, 0.0);
  o.probs.assign(H * lq * lk, 0.0);
  o.scores.assign(H * lq * lk, -INFINITY);
  o.score_tol.assign(H * lq * lk, 0.0);
  std::vector<double> s(lk);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        s[j] = -INFINITY;
        if (!a.mask.is_allowed(i, j, lk)) continue;
        double dot = 0, mag = 0;
        for (int64_t e = 0; e < dh; ++e) {
          const double p = double(q.data[i * H * dh + h * dh + e]) * k.data[j * H * dh + h * dh + e];
          dot += p;
          mag += std::fabs(p);
        }
        s[j] = a.scale * dot;
        o.score_tol[(h * lq + i) * lk + j] = (dh + 2) * kU * std::fabs(a.scale) * mag;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) sum += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
      double vmax = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const size_t pi = (h * lq + i) * lk + j;
        o.scores[pi] = s[j];
        o.probs[pi] = std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx) / sum;
      }
      for (int64_t d = 0; d < dv; ++d) {
        double acc = 0, mag = 0;
        for (int64_t j = 0; j < lk; ++j) {
          const double vj = v.data[j * H * dv + h * dv + d];
          const double p = o.probs[(h * lq + i) * lk + j];
          acc += p * vj;
          mag += p * std::fabs(vj);
          vmax = std::max(vmax, std::fabs(vj));
        }
        o.out[i * H * dv + h * dv + d] = acc;
        o.out_tol[i * H * dv + h * dv + d] = lk * kU * mag;
      }
      for (int64_t d = 0; d < dv; ++d) o.out_tol[i * H * dv + h * dv + d] += 2e-6 * vmax;
    }
  return o;
}

// A row of the attention shape tables: heads, lengths, head widths and the mask to build.
struct AttentionCase {
  int heads;
  int64_t lq, lk, dh, dv;
  bool causal;
  int64_t offset;
  int key_valid;  // 0 none, 1 random with zeros, 2 all padding
  int allowed;    // 0 none, 1 random, 2 band |i - j| <= 8, 3 random with empty rows
  bool probs, scores;
  float scale;
  int64_t window = 0;  // with causal: a sliding window (Mistral)
};

inline AttentionArgs attention_args(const AttentionCase& c, uint32_t seed) {
  AttentionArgs a;
  a.heads = c.heads;
  a.scale = c.scale;
  a.want_probs = c.probs;
  a.want_scores = c.scores;
  a.mask.causal = c.causal;
  a.mask.causal_offset = c.offset;
  a.mask.window = c.window;
  std::mt19937 gen(seed);
  if (c.key_valid == 1) {
    a.mask.key_valid.assign(c.lk, 1);
    for (auto& b : a.mask.key_valid) b = gen() % 4 != 0;
  } else if (c.key_valid == 2) {
    a.mask.key_valid.assign(c.lk, 0);
  }
  if (c.allowed) {
    a.mask.allowed.assign(c.lq * c.lk, 0);
    for (int64_t i = 0; i < c.lq; ++i)
      for (int64_t j = 0; j < c.lk; ++j) {
        uint8_t& m = a.mask.allowed[i * c.lk + j];
        if (c.allowed == 2) m = std::abs(i - j) <= 8;
        else if (c.allowed == 3) m = (i % 3 != 1) && gen() % 2;
        else m = gen() % 3 != 0;
      }
  }
  return a;
}

}  // namespace atlas::op_test
