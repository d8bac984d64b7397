#version 450
// RMSNorm (core/backend/backend.h; host reference rms_norm_reference): per row of length d,
// y = x / sqrt(mean(x^2) + eps) * w, w one learned gain per dimension.
#include "common.glsl"
#include "row_reduce.glsl"
layout(local_size_x = 32) in;  // ROW_WG
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint row0; uint rows; uint d; uint x_base; uint y_base; float eps; } pc;

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = pc.row0 + gl_WorkGroupID.x; r < pc.row0 + pc.rows; r += gl_NumWorkGroups.x) {
    const uint xo = r * pc.d - pc.x_base, yo = r * pc.d - pc.y_base;
    float s = 0.0;
    for (uint c = t; c < pc.d; c += ROW_WG) s += x[xo + c] * x[xo + c];
    const float f = 1.0 / sqrt(wg_sum(s) / float(pc.d) + pc.eps);
    for (uint c = t; c < pc.d; c += ROW_WG) y[yo + c] = x[xo + c] * f * w[c];
  }
}
