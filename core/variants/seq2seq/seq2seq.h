#pragma once
// Recurrent encoder-decoder with attention and the Pointer Network (seed 004, "Attention?
// Attention!"; Bahdanau et al. 2015, Luong et al. 2015, Vinyals et al. 2015), dispatched from
// Model::forward when config.rnn_seq2seq(). Runs on the host (small sequential matrices).
//
// Encoder: embeddings x_i -> (bidirectional) GRU/LSTM, h_i = [fwd_i; bwd_i] [Ls, E].
// Decoder, teacher-forced over the target y_1..y_m (input at step t: y_{t-1}, or a learned
// start vector at t = 1), s_0 = tanh(W_init h_bar + b) with h_bar = bwd_1 (Bahdanau) or the
// last forward state:
//   bahdanau  alpha_t = align(s_{t-1}, h),  c_t = sum_i alpha_ti h_i,
//             s_t = cell([y_{t-1}; c_t], s_{t-1}),  logits_t = W_o [s_t; c_t]
//   luong     s_t = cell([y_{t-1}; h~_{t-1}], s_{t-1}),  alpha_t = align(s_t, h),
//             h~_t = tanh(W_c [c_t; s_t]),  logits_t = W_o h~_t          (input feeding)
//   pointer   s_t = cell(x_{c_{t-1}}, s_{t-1}),  p(c_t | ...) = align(s_t, h)   (Vinyals)
// align = softmax of config.score over the source, restricted for local attention (Luong) to
// the window |i - p_t| <= D: local-m p_t = min(t, Ls - 1); local-p p_t = Ls sigmoid(v_p^T
// tanh(W_p s)), weights multiplied by exp(-(i - p_t)^2 / (2 sigma^2)), sigma = D / 2 (rows of
// local-p then sum to less than 1, as in Luong eq. 10). Hard selection replaces the row by a
// one-hot at its argmax (the first maximum).
#include <vector>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/variants/seq2seq/rnn_cells.h"

namespace atlas {

// Every tensor of the recurrent model (replaces the Transformer's list in param_specs).
std::vector<ParamSpec> seq2seq_param_specs(const ModelConfig& c);

// Encoder state size E (2 hidden_size when bidirectional).
int64_t seq2seq_encoder_size(const ModelConfig& c);

// Luong's local window for one step: the allowed source positions (1/0) [Ls] and the centre.
// local-m: p_t = min(t, Ls - 1); local-p: p_t = Ls * sigmoid(center_logit).
std::vector<uint8_t> local_window(Alignment a, int64_t t, int64_t ls, int64_t window,
                                  float center_logit, float* center);
// Alignment of one decoder step over the source: scores e [Ls] -> weights [Ls] (window mask,
// Gaussian for local-p, one-hot for hard). `scores` gets -inf outside the window.
RowVec align_step(RowVec& scores, const std::vector<uint8_t>& allowed, Alignment a, float center,
                  int64_t window, Selection selection);

// Runs the model. target may be empty only for a Pointer Network (greedy decoding of Ls steps,
// each step excluding the positions already pointed to, so the output is a permutation).
RunResult seq2seq_forward(const ModelConfig& c, const ParamStore& params,
                          const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target,
                          const RunOptions& options);

}  // namespace atlas
