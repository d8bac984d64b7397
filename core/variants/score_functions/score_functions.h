#pragma once
// Alignment score functions of seed 004's summary table ("Attention? Attention!"), for any
// attention layer of any model and for the recurrent encoder-decoder
// (core/variants/seq2seq/seq2seq.cpp):
//   scaled_dot  s.h / sqrt(n)                         (Vaswani et al. 2017)
//   dot         s.h                                   (Luong et al. 2015)
//   general     s^T W_a h                             (Luong et al. 2015)
//   additive    v_a^T tanh(W_a [s; h]) = v_a^T tanh(W1 s + W2 h)   (Bahdanau et al. 2015)
//   cosine      beta cos(s, h)                        (content-based, Graves et al. 2014)
//   location    alpha_t = softmax(W_a s): column j of W_a s scores key j; keys are ignored
//               (Luong et al. 2015). W_a has max_positions rows; rows beyond Lk are dropped.
// In a Transformer the backend runs them (the score_attention module op, score_attention.h; a
// device kernel may replace its host reference).
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/tensor/tensor.h"

namespace atlas {

class ForwardPass;

// One head's score parameters; a function uses only its own (the others stay empty).
struct ScoreWeights {
  Mat w;      // general [dq, dk]; location [max_positions, dq]
  Mat w1;     // additive [d_attn, dq]
  Mat w2;     // additive [d_attn, dk]
  RowVec v;   // additive [d_attn]
  float strength = 1.0f;  // cosine beta
};

const char* score_function_name(ScoreFunction f);
const std::vector<ScoreFunction>& all_score_functions();  // table order, scaled_dot first
bool score_function_has_weights(ScoreFunction f);           // general, additive, location

// Raw (unmasked) scores [Lq, Lk] of queries q [Lq, dq] against keys k [Lk, dk]. Throws
// AtlasError when the sizes do not fit the function (dot needs dq == dk; location needs
// Lk <= rows of W_a).
Mat score_matrix(ScoreFunction f, const Mat& q, const Mat& k, const ScoreWeights& w);

// Sets masked entries of `scores` to -inf and returns the row softmax over the allowed keys;
// a query with no allowed key gets a zero row (as the backend does), never NaN.
Mat masked_softmax(Mat& scores, const AttentionMask& mask);

// Weights drawn from a fixed generator (seed, name) with Glorot-normal scale, for a function
// whose parameters a model does not have (atlas scores) and for tests.
ScoreWeights seeded_score_weights(ScoreFunction f, int64_t dq, int64_t dk, int64_t d_attn,
                                  int64_t max_positions, uint64_t seed);

// ---- Transformer hook (forward_pass.cpp, params.cpp) ----
// The tensors of config.score for every attention sub-layer listed in `specs` (found by their
// `.wq`): general `<prefix>.score.w` [H, dh, dh]; additive `.score.w1`, `.score.w2`
// [H, d_attn, dh] and `.score.v` [H, d_attn]; location `.score.w` [H, max_positions, dh].
void append_score_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);
// One head's weights out of the [H, ...] tensors of a layer (host copies).
ScoreWeights head_score_weights(ScoreFunction f, const Tensor* w, const Tensor* w1,
                                const Tensor* w2, const Tensor* v, int64_t head, float strength);
bool score_function_applies(const ModelConfig& c);  // any function other than scaled_dot
// Attention of all heads with config.score on the backend: q [Lq, H*dh], k, v [Lk, H*dh] ->
// concatenated heads [Lq, H*dh] (before W^O). Traces `traced_name` and `.scores`.
DTensor score_function_attention(ForwardPass& pass, const DTensor& q, const DTensor& k,
                                 const DTensor& v, const std::string& prefix,
                                 const std::string& traced_name, const AttentionMask& mask);

}  // namespace atlas
