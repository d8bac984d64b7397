#version 450
// y = act(x), elementwise over [i0, i0 + n); kind 0 = ReLU, 1 = GELU erf, 2 = GELU tanh,
// 3 = SiLU x / (1 + exp(-x)) (core/backend/backend.h Activation).
#include "common.glsl"
#include "erf.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC { uint i0; uint n; uint x_base; uint y_base; uint kind; } pc;

void main() {
  const uint stride = gl_NumWorkGroups.x * ELT_WG;
  for (uint t = gl_GlobalInvocationID.x; t < pc.n; t += stride) {
    const uint i = pc.i0 + t;
    const float v = x[i - pc.x_base];
    float r;
    if (pc.kind == 0u) r = v > 0.0 ? v : 0.0;
    else if (pc.kind == 1u) r = gelu_erf(v);
    else if (pc.kind == 2u) r = gelu_tanh(v);
    else r = v / (1.0 + exp(-v));
    y[i - pc.y_base] = r;
  }
}
