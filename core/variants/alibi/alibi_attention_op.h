#pragma once
// ALiBi attention on one self-attention head set (Press, Smith & Lewis 2022, eq. in §3), a
// module op (core/backend/module_op.h) whose host reference is alibi_attention_reference and
// whose Vulkan kernel is gpu/variants/alibi/vk_alibi_attention.cpp. Per head h with slope m_h:
//   e_ij = scale q_i . k_j - m_h |i + Lk - Lq - j|,  -inf where the mask forbids j
//   a_ij = softmax_j(e_ij)  (a row with no allowed key is zeros),  o_i = sum_j a_ij v_j
// The queries are the last Lq of the Lk key positions (a cached prefix in front), so for a
// causal decoder the bias is -m (i - j), as in the paper; an encoder gets the symmetric
// -m |i - j| (as BLOOM's and MPT's code writes it).
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ModuleOp;

struct AlibiAttentionArgs {
  AttentionArgs attn;         // heads, scale, mask, want_probs, want_scores
  std::vector<float> slopes;  // [heads] m_h (alibi_slopes.h)
};

// The attention on `be`: q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] (shapes checked first, the
// same message on every backend).
// Results as AttentionResult (backend.h): out [Lq, heads * d_value], probs and scores
// [heads, Lq, Lk] when attn asks (scores: bias included, masked = -inf).
AttentionResult alibi_attention(Backend& be, const DTensor& q, const DTensor& k,
                                const DTensor& v, const AlibiAttentionArgs& args);

// The backend op "alibi_attention": inputs {q, k, v}; outputs {out, then probs when want_probs,
// scores when want_scores}.
const ModuleOp& alibi_attention_op();

struct AlibiAttentionHost {
  Tensor out, probs, scores;  // probs and scores always filled
};
// Host reference: what the CPU backend runs, what a backend without the kernel falls back to,
// and what the kernel is tested against.
AlibiAttentionHost alibi_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AlibiAttentionArgs& args);

// Throws AtlasError naming the mismatch.
void check_alibi_attention_shapes(const Shape& q, const Shape& k, const Shape& v,
                                  const AlibiAttentionArgs& args);

}  // namespace atlas
