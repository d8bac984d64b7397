#version 450
// LayerNorm over rows of length d: (x - mean) / sqrt(var + eps) * gamma + beta, biased
// variance from a second pass over the row (more accurate than E[x^2] - mean^2).
#include "common.glsl"
#include "row_reduce.glsl"
layout(local_size_x = 32) in;  // ROW_WG
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bt { float beta[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint row0; uint rows; uint d; uint x_base; uint y_base; float eps; } pc;

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = pc.row0 + gl_WorkGroupID.x; r < pc.row0 + pc.rows; r += gl_NumWorkGroups.x) {
    const uint xo = r * pc.d - pc.x_base, yo = r * pc.d - pc.y_base;
    float s = 0.0;
    for (uint c = t; c < pc.d; c += ROW_WG) s += x[xo + c];
    const float mean = wg_sum(s) / float(pc.d);
    float v = 0.0;
    for (uint c = t; c < pc.d; c += ROW_WG) {
      const float dx = x[xo + c] - mean;
      v += dx * dx;
    }
    const float inv = 1.0 / sqrt(wg_sum(v) / float(pc.d) + pc.eps);
    for (uint c = t; c < pc.d; c += ROW_WG) y[yo + c] = (x[xo + c] - mean) * inv * gamma[c] + beta[c];
  }
}
