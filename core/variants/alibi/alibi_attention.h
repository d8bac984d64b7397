#pragma once
// The ALiBi self-attention sub-layer on the inference backend (the backend half of the
// mechanism's kernel, alibi_kernel.h): the slopes of the config's heads, the alibi_attention
// module op (alibi_attention_op.h), and its traces.
#include <string>

#include "core/backend/backend.h"

namespace atlas {

class ForwardPass;

// Traced once per layer when positional arrays are traced: `<prefix>.alibi.slopes` [heads].
inline constexpr const char* kAlibiSlopesSuffix = ".alibi.slopes";

// q [Lq, H*dh], k, v [Lk, H*dh] -> the heads' outputs [Lq, H*dh] (before W^O). Traces
// `traced_name` (probabilities), its scores companion (bias included) and the layer's slopes.
DTensor alibi_attention_layer(ForwardPass& pass, const DTensor& q, const DTensor& k,
                              const DTensor& v, const std::string& prefix,
                              const std::string& traced_name, const AttentionMask& mask);

}  // namespace atlas
