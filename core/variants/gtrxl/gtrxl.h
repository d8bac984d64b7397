#pragma once
// GTrXL gating layers (Parisotto et al. 2019; seeds 000, 001; REFERENCES.md "GTrXL"), hooked
// into the Transformer-XL block (core/variants/transformer_xl/transformer_xl.cpp) in place of its residual connections.
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/tensor/tensor.h"

namespace atlas {

class ForwardPass;

// The two gated sub-layers of an XL block. Tensors live under
// `decoder.layer<i>.self_attn_gate.*` and `decoder.layer<i>.ffn_gate.*`; traced arrays under
// `decoder.seg<s>.layer<i>.attn.gate.*` and `.ffn.gate.*`.
enum class GatedSublayer { Attention, Ffn };

// "decoder.layer3.self_attn_gate" / "decoder.layer3.ffn_gate".
std::string gate_tensor_prefix(int64_t layer, GatedSublayer s);

// Per layer and sub-layer: w_g [d, d] (input, output, highway), b_g [d] (output, highway, GRU,
// constant gating.bias_init), and for GRU w_r, u_r, w_z, u_z, w_g, u_g [d, d]. Linear maps are
// stored [out, in] without a bias, as every other projection (y = x W^T).
void append_gtrxl_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);

// One gate's parameters (unused ones empty). Row-vector convention: W y is y W^T per row.
struct GateWeights {
  Mat w_r, u_r, w_z, u_z, w_g, u_g;  // [d, d]
  Eigen::RowVectorXf b_g;            // [d]
};

// A gate activation as traced: "input", "output", "highway" (the sigmoid of that gate), or the
// GRU's "r" and "z".
struct GateActivation {
  std::string name;
  Mat value;  // [L, d], each entry in [0, 1]
};

// g(x, y) for the residual stream x [L, d] and the sub-layer output y [L, d] (after the ReLU of
// the reordering, which the caller applies):
//   none     x + y
//   input    sigma(W_g x) * x + y
//   output   x + sigma(W_g x - b_g) * y
//   highway  sigma(W_g x + b_g) * x + (1 - sigma(W_g x + b_g)) * y
//   gru      r = sigma(W_r y + U_r x), z = sigma(W_z y + U_z x - b_g),
//            h = tanh(W_g y + U_g (r * x)), g = (1 - z) * x + z * h
// The sigmoids it computed are appended to `activations` when it is not null.
Mat apply_gate(GateType type, const GateWeights& w, const Mat& x, const Mat& y,
               std::vector<GateActivation>* activations);

// Names of the activations a gate type traces, in order ({} for none; {"r", "z"} for GRU).
std::vector<std::string> gate_activation_names(GateType type);

// The XL hook: combines the residual stream x [Lq, d] with the sub-layer output y [Lq, d] of
// layer `layer` in segment `seg`: ReLU(y) under gating.identity_map_reorder, then the gate of
// gating.type, whose activations are traced as decoder.seg<s>.layer<i>.<attn|ffn>.gate.<g>.
DTensor gtrxl_combine(ForwardPass& pass, const DTensor& x, const DTensor& y, int64_t layer,
                      int64_t seg, GatedSublayer sublayer);

}  // namespace atlas
