#pragma once
// Host reference of the score_attention op (core/backend/backend.h, ScoreAttentionArgs): what the CPU
// backend runs, what a backend without a kernel falls back to, and what device kernels are
// tested against.
#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct ScoreAttentionHost {
  Tensor out, probs, scores;  // as AttentionResult (all filled; scores -inf where masked)
};

// w, w1, w2, v_a: host copies of ScoreAttentionArgs' weights (empty tensors when unused).
ScoreAttentionHost score_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& w, const Tensor& w1, const Tensor& w2,
                                             const Tensor& v_a, const ScoreAttentionArgs& args);

// Throws AtlasError naming the mismatch (also for the weights' shapes).
void check_score_attention_shapes(const Shape& q, const Shape& k, const Shape& v,
                                  const ScoreAttentionArgs& args);

}  // namespace atlas
