#pragma once
// Shape checks of the performer_attention backend op (core/backend.h, PerformerArgs), shared
// by the host default (core/performer_op.cpp) and device implementations.
#include "backend.h"

namespace atlas {

// Throws AtlasError naming the mismatch.
void check_performer_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& features,
                            const PerformerArgs& args);

}  // namespace atlas
