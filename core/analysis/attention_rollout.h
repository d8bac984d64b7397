#pragma once
// Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"), the
// usual way to see what a ViT's [CLS] token attends to across the whole stack: each layer's
// head-averaged attention plus the identity for the residual, rows renormalised,
//   A~_l = (mean_h A_l + I) / 2,      R_l = A~_l R_{l-1},   R_0 = I.
// Row i of R_l says how much each input token flows into token i after layer l.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/trace.h"

namespace atlas {

// R after layers 0..last of `stack` ("encoder" or "decoder"), read from the traced
// "<stack>.layer<i>.attn" (or ".self_attn") arrays [heads, L, L]; last = -1 means all layers.
// Throws AtlasError when a layer's attention was not traced or the layer does not exist.
Tensor attention_rollout(const Trace& trace, const std::string& stack, int64_t last = -1);

// One layer's residual-mixed attention A~ = rownorm(0.5 A + 0.5 I) from the head-averaged
// attention `a` [n, n] (row-major); rows with no weight stay zero.
Tensor residual_mix(const float* a, int64_t n);

// The per-layer matrices rollout multiplies, A~_l for l = 0..last, each [L, L]: what attention
// flow (attention_flow.h) takes as its graph's capacities. Same errors as attention_rollout.
std::vector<Tensor> residual_attention(const Trace& trace, const std::string& stack, int64_t last = -1);

}  // namespace atlas
