#pragma once
// Seed 004's score functions other than scaled dot (core/variants/score_functions/
// score_functions.h) on one attention call, a module op (core/backend/module_op.h) whose host
// reference is score_attention_reference and whose Vulkan kernel is
// gpu/variants/score_functions/vk_score_attention.cpp. Per head h, with the head's slice of the
// layer's [H, ...] weights:
//   dot      e_ij = q_i . k_j
//   general  e_ij = q_i W_h k_j^T                      W_h [dh, dh]
//   cosine   e_ij = beta q_i . k_j / max(|q_i| |k_j|, 1e-8)
//   location e_ij = (W_h q_i)_j, keys unused           W_h [max_positions, dh], Lk <= max_positions
//   additive e_ij = v_h . tanh(W1_h q_i + W2_h k_j)   W1_h, W2_h [d_attn, dh], v_h [d_attn]
// then -inf where the mask forbids, a row softmax (a zero row when no key is allowed) and
// o_i = sum_j a_ij v_j. attn.scale is not used.
#include "core/backend/backend.h"
#include "core/variants/score_functions/score_functions_config.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ModuleOp;

// The op's arguments other than tensors.
struct ScoreOpArgs {
  AttentionArgs attn;  // heads, mask, want_probs, want_scores
  ScoreFunction function = ScoreFunction::Dot;
  float strength = 1.0f;  // cosine beta
};

struct ScoreAttentionArgs : ScoreOpArgs {
  DTensor w;            // general [H, dh, dh], location [H, max_positions, dh]
  DTensor w1, w2, v_a;  // additive [H, d_attn, dh] twice and [H, d_attn]
};

// The attention on `be` (shapes checked first, the same message on every backend).
AttentionResult score_attention(Backend& be, const DTensor& q, const DTensor& k, const DTensor& v,
                                const ScoreAttentionArgs& args);

// The backend op "score_attention" with arguments ScoreOpArgs: inputs {q, k, v, then w for
// general and location, or w1, w2, v_a for additive}; outputs {out, then probs when want_probs,
// then scores when want_scores}.
const ModuleOp& score_attention_op();

// The function's weights, in the op's input order after q, k, v: W for general and location,
// W1, W2, v_a for additive, none for dot and cosine. The op's call puts them there and its host
// reference and kernel read them back through score_weight_inputs: one rule for all three.
inline std::vector<DTensor ScoreAttentionArgs::*> score_weights(ScoreFunction f) {
  if (f == ScoreFunction::General || f == ScoreFunction::Location) return {&ScoreAttentionArgs::w};
  if (f == ScoreFunction::Additive)
    return {&ScoreAttentionArgs::w1, &ScoreAttentionArgs::w2, &ScoreAttentionArgs::v_a};
  return {};
}
template <class T>
struct ScoreWeightInputs {  // null where the function has none
  const T *w = nullptr, *w1 = nullptr, *w2 = nullptr, *v_a = nullptr;
};
template <class T>
ScoreWeightInputs<T> score_weight_inputs(const std::vector<T>& in, ScoreFunction f) {
  ScoreWeightInputs<T> r;
  size_t next = 3;
  for (DTensor ScoreAttentionArgs::*role : score_weights(f)) {
    const T* t = &in.at(next++);
    if (role == &ScoreAttentionArgs::w) r.w = t;
    if (role == &ScoreAttentionArgs::w1) r.w1 = t;
    if (role == &ScoreAttentionArgs::w2) r.w2 = t;
    if (role == &ScoreAttentionArgs::v_a) r.v_a = t;
  }
  return r;
}

struct ScoreAttentionHost {
  Tensor out, probs, scores;  // as AttentionResult (all filled; scores -inf where masked)
};

// Host reference: what the CPU backend runs, what a backend without the kernel falls back to,
// and what the kernel is tested against. w, w1, w2, v_a: host copies of ScoreAttentionArgs'
// weights (empty tensors when unused).
ScoreAttentionHost score_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& w, const Tensor& w1, const Tensor& w2,
                                             const Tensor& v_a, const ScoreOpArgs& args);

// Throws AtlasError naming the mismatch (also for the weights' shapes).
void check_score_attention_shapes(const Shape& q, const Shape& k, const Shape& v,
                                  const ScoreAttentionArgs& args);

}  // namespace atlas
