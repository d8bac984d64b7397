#version 450
// One step of Adaptive Computation Time (core/variants/universal/act_step.h; host reference
// act_step_reference in act_step_op.cpp). Invocation n handles element (i, c) of the [L, d] state,
// n = i * d + c; every invocation of row i evaluates the row's halting decision itself (a
// sigmoid and a compare, identical in each), so there is no shared memory and no barrier,
// and the invocation with c = 0 writes the row's halting state and weights. With d = 0 the
// grid has one invocation per row.
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer HaltIn { float halt_in[]; };  // [L, 4]
layout(std430, set = 0, binding = 1) readonly buffer YIn { float y_in[]; };
layout(std430, set = 0, binding = 2) readonly buffer StateIn { float state_in[]; };
layout(std430, set = 0, binding = 3) readonly buffer Logit { float logit[]; };  // [L, 1]
layout(std430, set = 0, binding = 4) readonly buffer StepOut { float step_out[]; };
layout(std430, set = 0, binding = 5) writeonly buffer HaltOut { float halt_out[]; };
layout(std430, set = 0, binding = 6) writeonly buffer YOut { float y_out[]; };
layout(std430, set = 0, binding = 7) writeonly buffer StateOut { float state_out[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Weights { float weights[]; };  // [L, 2]
layout(push_constant) uniform PC {
  uint rows; uint d;
  uint flags;
  float threshold;
} pc;

const uint LAST_STEP = 1u, INTERPOLATE = 2u;

void main() {
  const uint cols = max(pc.d, 1u);
  const uint n = gl_GlobalInvocationID.x;
  if (n >= pc.rows * cols) return;
  const uint i = n / cols, c = n % cols;
  const float cum = halt_in[4u * i], rem = halt_in[4u * i + 1u], steps = halt_in[4u * i + 2u];
  const bool halted_before = halt_in[4u * i + 3u] != 0.0;

  float h = 0.0, w = 0.0;
  vec4 next = vec4(cum, rem, steps, halt_in[4u * i + 3u]);
  if (!halted_before) {
    h = 1.0 / (1.0 + exp(-logit[i]));
    next.z = steps + 1.0;
    if (cum + h >= pc.threshold || (pc.flags & LAST_STEP) != 0u) {
      w = 1.0 - cum;
      next = vec4(1.0, w, next.z, 1.0);
    } else {
      w = h;
      next.x = cum + h;
    }
  }
  if (c == 0u) {
    for (uint e = 0u; e < 4u; ++e) halt_out[4u * i + e] = next[e];
    weights[2u * i] = h;
    weights[2u * i + 1u] = w;
  }
  if (c < pc.d) {
    const uint o = i * pc.d + c;
    if (halted_before) {
      y_out[o] = y_in[o];
      state_out[o] = state_in[o];
    } else {
      const float t = step_out[o];
      y_out[o] = (pc.flags & INTERPOLATE) != 0u ? w * t + (1.0 - w) * y_in[o] : y_in[o] + w * t;
      state_out[o] = t;
    }
  }
}
