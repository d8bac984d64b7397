#version 450
// y = a * b, elementwise (the gated feed-forward's product) over [i0, i0 + n).
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint i0; uint n; uint a_base; uint b_base; uint y_base; } pc;

void main() {
  const uint stride = gl_NumWorkGroups.x * ELT_WG;
  for (uint t = gl_GlobalInvocationID.x; t < pc.n; t += stride) {
    const uint i = pc.i0 + t;
    y[i - pc.y_base] = a[i - pc.a_base] * b[i - pc.b_base];
  }
}
