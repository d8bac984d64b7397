#pragma once
// The adaptive span's mask and distance (core/variants/adaptive_span/adaptive_span.cpp has the
// equations), shared by the relative_attention module op
// (core/variants/relative_attention/relative_attention_op.h) and its trace summaries.
#include <cstdint>

#include "core/variants/adaptive_span/span_mask.h"  // span_distance

namespace atlas {

// m_z(x - o) = clamp((R + z - x + o) / R, 0, 1); 0 beyond the maximum span S
// (core/variants/adaptive_span/span_mask.h; o = AdaptiveSpanConfig::distance_offset()).
float span_mask(float z, int64_t x, int64_t ramp, int64_t max_span, int64_t offset = 0);

}  // namespace atlas
