#pragma once
// Shaw relative positions and / or the adaptive-span soft mask on one self-attention head set,
// a module op (core/backend/module_op.h) whose host reference is relative_attention_reference
// and whose Vulkan kernel is gpu/variants/relative_attention/vk_relative_attention.cpp. Per
// head h:
//   e_ij = scale (q_i . k_j + [shaw] q_i . a^K_{r(i,j)}), -inf where the hard mask forbids j
//   a_ij = softmax_j over m_ij > 0 of e_ij weighted by m_ij         (span inside), or
//   a_ij = p_ij m_ij / (sum_r p_ir m_ir + 1e-8), p = softmax(e)      (span after), or softmax(e)
//   o_i  = sum_j a_ij (v_j + [shaw] a^V_{r(i,j)})
// with r(i, j) = clip(j - (i + Lk - Lq), -k, k) + k and m_ij = m_z(|i + Lk - Lq - j| - o),
// o = span_offset (core/variants/adaptive_span/span_mask.h).
#include <cstdint>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ModuleOp;

// The op's arguments other than tensors.
struct RelativeOpArgs {
  AttentionArgs attn;          // heads, scale, hard mask, want_probs, want_scores
  int64_t max_distance = 0;    // Shaw k
  bool shaw_efficient = true;  // host reference: seed 001 eq. 5 (same values, other rounding)
  std::vector<float> span_z;   // [heads, Lq] span z per head and query; empty: no span mask
  int64_t span_ramp = 32;      // R
  int64_t span_max = 0;        // S: keys farther than S get m = 0
  int64_t span_offset = 0;     // o: 0 the paper's distance, 1 the reference code's
  bool span_after = false;     // mask after the softmax and renormalise (the reference code)
  bool want_terms = false;     // Shaw key_term (scaled) and value_term
  bool want_span_mask = false;
  bool span() const { return !span_z.empty(); }
};

struct RelativeAttentionArgs : RelativeOpArgs {
  DTensor rel_k, rel_v;  // Shaw tables [2k+1, d_head] (empty handles: no Shaw term)
  bool shaw() const { return static_cast<bool>(rel_k); }
};

struct RelativeAttentionResult {
  DTensor out;         // [Lq, heads * d_value]
  DTensor probs;       // [heads, Lq, Lk] when attn.want_probs
  DTensor scores;      // [heads, Lq, Lk] when attn.want_scores (masked = -inf)
  DTensor key_term;    // [heads, Lq, Lk] scale * q_i . a^K when want_terms with Shaw
  DTensor value_term;  // [heads, Lq, d_value] sum_j a_ij a^V when want_terms with Shaw
  DTensor span_mask;  // [heads, Lq, Lk] m_ij (0 where the hard mask forbids) when asked with a span
};

// The attention on `be`: q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] (shapes checked first, the
// same message on every backend).
RelativeAttentionResult relative_attention(Backend& be, const DTensor& q, const DTensor& k,
                                           const DTensor& v, const RelativeAttentionArgs& args);

// The backend op "relative_attention" with arguments RelativeOpArgs: inputs {q, k, v, then
// rel_k, rel_v with Shaw}; outputs {out, then probs when want_probs, scores when want_scores,
// key_term and value_term when want_terms with Shaw, span_mask when want_span_mask with a span}.
const ModuleOp& relative_attention_op();
inline constexpr size_t kRelativeInputsWithShaw = 5;

// Host results; the key / value terms and the span mask are empty tensors unless asked for.
struct RelativeAttentionHost {
  Tensor out, probs, scores, key_term, value_term, span_mask;
};
// Host reference: what the CPU backend runs, what a backend without the kernel falls back to,
// and what the kernel is tested against. Shaw tables ak [2k+1, dh], av [2k+1, dv] (empty: no
// Shaw term). probs and scores are always filled.
RelativeAttentionHost relative_attention_reference(const Tensor& q, const Tensor& k,
                                                   const Tensor& v, const Mat& ak, const Mat& av,
                                                   const RelativeOpArgs& args);

// Throws AtlasError naming the mismatch (the tables' shapes too when `shaw`).
void check_relative_attention_shapes(const Shape& q, const Shape& k, const Shape& v, bool shaw,
                                     const Shape& rel_k, const Shape& rel_v,
                                     const RelativeOpArgs& args);

}  // namespace atlas
