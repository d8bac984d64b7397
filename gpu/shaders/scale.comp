#version 450
// y = s * x, elementwise over [i0, i0 + n).
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint i0; uint n; uint x_base; uint y_base; float s; } pc;

void main() {
  const uint stride = gl_NumWorkGroups.x * ELT_WG;
  for (uint t = gl_GlobalInvocationID.x; t < pc.n; t += stride) {
    const uint i = pc.i0 + t;
    y[i - pc.y_base] = x[i - pc.x_base] * pc.s;
  }
}
