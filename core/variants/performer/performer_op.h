#pragma once
// Shape checks of the performer_attention backend op (core/backend/backend.h, PerformerArgs), shared
// by the host default (core/variants/performer/performer_op.cpp) and device implementations.
#include "core/backend/backend.h"

namespace atlas {

// Throws AtlasError naming the mismatch.
void check_performer_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& features,
                            const PerformerArgs& args);

}  // namespace atlas
