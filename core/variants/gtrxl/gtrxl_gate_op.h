#pragma once
// Shape checks of the gtrxl_gate backend op (core/backend/backend.h, GateArgs), shared by the host
// default (core/variants/gtrxl/gtrxl_gate_op.cpp) and device implementations.
#include "core/backend/backend.h"

namespace atlas {

// Throws AtlasError naming the tensor whose shape does not fit x [L, d] and y [L, d].
void check_gate_shapes(const Shape& x, const Shape& y, const GateArgs& args);

}  // namespace atlas
