#version 450
// Gather: y[r, :] = table[ids[r], :] * scale, one workgroup per row (grid-stride over rows).
// Ids were range-checked on the host.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer T { float table[]; };
layout(std430, set = 0, binding = 1) readonly buffer I { int ids[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint row0; uint rows; uint d; uint vocab; uint y_base; float scale; } pc;

void main() {
  for (uint r = pc.row0 + gl_WorkGroupID.x; r < pc.row0 + pc.rows; r += gl_NumWorkGroups.x) {
    const uint id = min(uint(ids[r]), pc.vocab - 1u);  // belt and braces: never read out of bounds
    const uint src = id * pc.d, dst = r * pc.d - pc.y_base;
    for (uint c = gl_LocalInvocationID.x; c < pc.d; c += ELT_WG) y[dst + c] = table[src + c] * pc.scale;
  }
}
