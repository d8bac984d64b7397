#pragma once
// Hooks of Shaw relative positions and adaptive span into the shared forward (forward_pass.cpp,
// params.cpp). Shaw relative positions (core/variants/shaw/shaw.cpp) and adaptive attention span
// (core/variants/adaptive_span/adaptive_span.cpp) change the scores and weights of a self-attention
// head, which the plain attention op cannot express: such heads go through the relative_attention
// module op (relative_attention_op.h).
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/model/trace.h"
#include "core/tensor/tensor.h"
#include "core/variants/adaptive_span/span_mask.h"
#include "core/variants/relative_attention/relative_attention_op.h"

namespace atlas {

class ForwardPass;

// Appends the variant tensors (Shaw tables, span parameters) of every self-attention layer.
void append_relative_attention_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);

// Attention of all heads through the relative_attention op: xq [Lq, d] (the sub-layer input, for
// the dynamic span), q [Lq, H*dh], k, v [Lk, H*dh] -> concatenated heads [Lq, H*dh] (before W^O).
// Traces `traced_name` (probabilities, scores) and the variant arrays.
DTensor relative_attention_layer(ForwardPass& pass, const DTensor& xq, const DTensor& q,
                                 const DTensor& k, const DTensor& v, const std::string& prefix,
                                 const std::string& traced_name, const AttentionMask& mask);

}  // namespace atlas
