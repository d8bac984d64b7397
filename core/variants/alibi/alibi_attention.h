#pragma once
// The ALiBi self-attention sub-layer on the inference backend (the backend half of the
// mechanism's kernel, alibi_kernel.h): the slopes of the config's heads, the alibi_attention
// module op (alibi_attention_op.h), and its traces.
#include <string>

#include "core/backend/backend.h"

namespace atlas {

class ForwardPass;

// Traced per layer when positional arrays are traced: `<prefix>.alibi.distance_bias` [L, heads],
// row d the bias -m_h d of a key d positions away (row 1: minus the slopes). One row per
// position, like a positional table, so a run continuing a cached prefix traces only its own
// rows d = Lk - Lq .. Lk - 1 and the splice (core/model/prefix_cache.h) completes it.
inline constexpr const char* kAlibiDistanceBiasSuffix = ".alibi.distance_bias";

// q [Lq, H*dh], k, v [Lk, H*dh] -> the heads' outputs [Lq, H*dh] (before W^O). Traces
// `traced_name` (probabilities), its scores companion (bias included) and the layer's biases.
DTensor alibi_attention_layer(ForwardPass& pass, const DTensor& q, const DTensor& k,
                              const DTensor& v, const std::string& prefix,
                              const std::string& traced_name, const AttentionMask& mask);

}  // namespace atlas
