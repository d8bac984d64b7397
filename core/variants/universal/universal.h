#pragma once
// Universal Transformer with ACT (core/variants/universal/universal.cpp), dispatched from Model::forward.
#include <vector>

#include "core/model/forward_pass.h"

namespace atlas {

// Runs the shared block recurrently over the embedded tokens of an encoder-only or decoder-only
// model and returns the final state [L, d] (after the final norm of pre-norm models).
DTensor universal_forward(ForwardPass& pass, const std::vector<TokenInfo>& tokens,
                          const std::vector<uint8_t>& key_valid);

// The parameters of the shared block and the halting unit (replace the per-layer ones).
void append_universal_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);

}  // namespace atlas
