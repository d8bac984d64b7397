#pragma once
// The Neural Turing Machine as a model (config.ntm(), dispatched from Model::forward):
// a seeded feed-forward controller drives the addressing of core/variants/ntm/ntm.h, one step per token.
//   h_t = tanh(W_c [x_t; r_{t-1}] + b_c)          x_t = embedding of token t, r = all reads
//   per head: raw = W_head h_t + b_head, split into
//     k = tanh, beta = softplus, g = sigmoid, s = softmax over 2R+1, gamma = 1 + softplus,
//     (write heads) e = sigmoid, a = tanh         (MarkPKCollier/NeuralTuringMachine)
//   logits_t = W_o [h_t; r_t] + b_o
// r_0 are the reads of the initial weights (one-hot at slot 0) from the learned M_0.
#include <vector>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/model/params.h"

namespace atlas {

std::vector<ParamSpec> ntm_param_specs(const ModelConfig& c);

// Head names in order: read0..read{R-1}, write0..write{W-1}.
std::vector<std::string> ntm_head_names(const ModelConfig& c);

RunResult ntm_forward(const ModelConfig& c, const ParamStore& params,
                      const std::vector<TokenInfo>& tokens, const RunOptions& options);

}  // namespace atlas
