#version 450
// Grouped-query attention's shared heads (core/backend/backend.h repeat_heads): x [L, kv * dh]
// -> y [L, kv * groups * dh], y's head h = x's head h / groups. One invocation per y element.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint rows; uint kv; uint groups; uint dh; } pc;

void main() {
  const uint width = pc.kv * pc.groups * pc.dh;
  const uint n = pc.rows * width;
  const uint stride = gl_NumWorkGroups.x * ELT_WG;
  for (uint t = gl_GlobalInvocationID.x; t < n; t += stride) {
    const uint l = t / width, c = t % width;
    const uint head = c / pc.dh, k = c % pc.dh;
    y[t] = x[l * pc.kv * pc.dh + (head / pc.groups) * pc.dh + k];
  }
}
