#version 450
// Rotary position embedding (core/variants/rotary/rope.h; host reference rope_reference). One
// invocation per (row l, head h, pair i) of x [L, heads * dh], grid-strided:
//   (a, b) = (i, i + r/2), or (2i, 2i + 1) when ADJACENT
//   y_a = x_a cos - x_b sin,  y_b = x_b cos + x_a sin,   cos = table[l, i], sin = table[l, r/2 + i]
// Dimensions past r are copied.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer T { float table[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC {
  uint rows; uint heads; uint dh; uint rotary; uint adjacent;
} pc;

void main() {
  const uint half_r = pc.rotary / 2u;
  const uint per_row = pc.heads * pc.dh;
  const uint n = pc.rows * per_row;
  const uint stride = gl_NumWorkGroups.x * ELT_WG;
  for (uint t = gl_GlobalInvocationID.x; t < n; t += stride) {
    const uint l = t / per_row, c = t % per_row, d = c % pc.dh;
    if (d >= pc.rotary) {
      y[t] = x[t];
      continue;
    }
    // Each invocation writes its own element, reading its partner.
    const bool first = pc.adjacent != 0u ? (d % 2u) == 0u : d < half_r;
    const uint i = pc.adjacent != 0u ? d / 2u : (first ? d : d - half_r);
    const uint partner = pc.adjacent != 0u ? (first ? t + 1u : t - 1u)
                                           : (first ? t + half_r : t - half_r);
    const float cs = table[l * pc.rotary + i], sn = table[l * pc.rotary + half_r + i];
    y[t] = first ? x[t] * cs - x[partner] * sn : x[t] * cs + x[partner] * sn;
  }
}
