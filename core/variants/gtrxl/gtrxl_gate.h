#pragma once
// GTrXL's gating layer in place of a residual x + y (Parisotto et al. 2019), a module op
// (core/backend/module_op.h) whose host reference is apply_gate (core/variants/gtrxl/gtrxl.h,
// whose comment has the equations) and whose Vulkan kernel is gpu/variants/gtrxl/vk_gtrxl_gate.cpp.
#include "core/backend/backend.h"
#include "core/variants/gtrxl/gtrxl_config.h"

namespace atlas {

struct ModuleOp;

// x the residual stream [L, d], y the sub-layer output [L, d], ReLU(y) first with relu_y (the
// identity-map reordering). Linear maps are [d, d] stored [out, in]; input, output and highway
// use w_g, GRU all six; b_g [d] for output, highway and GRU.
struct GateArgs {
  GateType type = GateType::None;
  bool relu_y = false;
  DTensor w_r, u_r, w_z, u_z, w_g, u_g, b_g;
};

struct GateResult {
  DTensor out;   // [L, d]
  DTensor gate;  // [L, d] the input / output / highway gate, or GRU's r (none: empty)
  DTensor z;     // [L, d] GRU's update gate z (other types: empty)
};

// The gate on `be` (shapes checked first, the same message on every backend).
GateResult gtrxl_gate(Backend& be, const DTensor& x, const DTensor& y, const GateArgs& args);

// The backend op "gtrxl_gate" with arguments GateOpArgs: inputs {x, y, the type's [d, d] maps
// (GRU: w_r, u_r, w_z, u_z, w_g, u_g; input, output, highway: w_g), b_g when the type has a
// bias}; outputs {out, then gate unless the type is none, then z for GRU}.
struct GateOpArgs {
  GateType type = GateType::None;
  bool relu_y = false;
};
const ModuleOp& gtrxl_gate_op();
// Whether the type's inputs end with b_g (the op, its host reference and its kernel ask this).
inline bool gate_has_bias(GateType t) {
  return t == GateType::Output || t == GateType::Highway || t == GateType::Gru;
}

// Throws AtlasError naming the tensor whose shape does not fit x [L, d] and y [L, d].
void check_gate_shapes(const Shape& x, const Shape& y, const GateArgs& args);

}  // namespace atlas
