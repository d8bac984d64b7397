#pragma once
// Transformer-XL relative attention of one layer, a module op (core/backend/module_op.h) whose
// host reference is xl_attention_reference and whose Vulkan kernel is
// gpu/variants/transformer_xl/vk_xl_attention.cpp. Keys are the m = Lk - Lq memory rows then the
// Lq current rows; query i sits at key position p = m + i. Per head h, with
// d(i, j) = min(p - j, clamp_len):
//   s_ij = scale [ (q_i + u_h) . k_j + (q_i + v_h) . rk_{d(i,j)} ]   over keys j <= p (and
//   j > p - mem_len with same_length), a = softmax(s), o_i = sum_j a_ij v_j.
// The four terms the trace shows: (a) q.k, (b) q.rk, (c) u.k, (d) v.rk, each times scale.
#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ModuleOp;

struct XlAttentionArgs {
  int heads = 1;
  float scale = 1.0f;
  int64_t mem_len = 0;  // only read with same_length
  bool same_length = false;
  int64_t clamp_len = -1;   // <= 0: distances are not clamped (as the reference)
  bool want_probs = false;  // probs [heads, Lq, Lk]
  bool want_terms = false;  // scores (-inf where masked) and terms a, b, c, d (0 where masked)
};

struct XlAttentionResult {
  DTensor out;                             // [Lq, heads * d_head]
  DTensor probs;                           // [heads, Lq, Lk] when want_probs
  DTensor scores;                          // [heads, Lq, Lk] when want_terms
  DTensor term_a, term_b, term_c, term_d;  // [heads, Lq, Lk] when want_terms
};

// The attention on `be`: q [Lq, H*dh], k, v [Lk, H*dh] with Lk >= Lq, rk [D, H*dh] with D > the
// largest distance used, u, vb [H, dh] (shapes checked first, the same message on every backend).
XlAttentionResult xl_attention(Backend& be, const DTensor& q, const DTensor& k, const DTensor& v,
                               const DTensor& rk, const DTensor& u, const DTensor& vb,
                               const XlAttentionArgs& args);

// The backend op "xl_attention" with arguments XlAttentionArgs: inputs {q, k, v, rk, u, vb};
// outputs {out, then probs when want_probs, then scores and terms a, b, c, d when want_terms}.
const ModuleOp& xl_attention_op();

// Host reference: what the CPU backend runs, what a backend without the kernel falls back to,
// and what the kernel is tested against.
struct XlAttentionHost {
  Tensor out, probs, scores, term_a, term_b, term_c, term_d;  // as XlAttentionResult (all filled)
};
XlAttentionHost xl_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& rk, const Tensor& u, const Tensor& vb,
                                       const XlAttentionArgs& args);

// Throws AtlasError naming the mismatch (shared with the device kernel).
void check_xl_attention_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& rk,
                               const Shape& u, const Shape& vb, const XlAttentionArgs& args);

}  // namespace atlas
