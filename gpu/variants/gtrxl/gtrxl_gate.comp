#version 450
// GTrXL gating (core/variants/gtrxl/gtrxl_gate.h; host reference apply_gate in core/variants/gtrxl/gtrxl.cpp), the
// elementwise part: the [d, d] maps are the backend's linear op, recorded before this. One
// invocation per element n of the [L, d] tensors (column c = n % d for the bias):
//   INPUT    g = sigma(a0);          out = g x + y
//   OUTPUT   g = sigma(a0 - b);      out = x + g y
//   HIGHWAY  g = sigma(a0 + b);      out = g x + (1 - g) y
//   GRU_RZ   r = sigma(a0 + a1), z = sigma(a2 + a3 - b); writes r, z and r x
//            (a0 = W_r y, a1 = U_r x, a2 = W_z y, a3 = U_z x)
//   GRU_OUT  h = tanh(a0 + a1);      out = (1 - z) x + z h     (a0 = W_g y, a1 = U_g (r x))
#include "common.glsl"
layout(local_size_x = 128) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(std430, set = 0, binding = 2) readonly buffer A0 { float a0[]; };
layout(std430, set = 0, binding = 3) readonly buffer A1 { float a1[]; };
layout(std430, set = 0, binding = 4) readonly buffer A2 { float a2[]; };
layout(std430, set = 0, binding = 5) readonly buffer A3 { float a3[]; };
layout(std430, set = 0, binding = 6) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 7) readonly buffer ZIn { float z_in[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Gate { float gate[]; };
layout(std430, set = 0, binding = 10) writeonly buffer ZOut { float z_out[]; };
layout(std430, set = 0, binding = 11) writeonly buffer RX { float rx[]; };
layout(push_constant) uniform PC {
  uint n; uint d;
  uint mode;
} pc;

const uint INPUT = 0u, OUTPUT = 1u, HIGHWAY = 2u, GRU_RZ = 3u, GRU_OUT = 4u;

float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= pc.n) return;
  const uint c = i % pc.d;
  if (pc.mode == INPUT) {
    const float g = sigmoid(a0[i]);
    gate[i] = g;
    o[i] = g * x[i] + y[i];
  } else if (pc.mode == OUTPUT) {
    const float g = sigmoid(a0[i] - b[c]);
    gate[i] = g;
    o[i] = x[i] + g * y[i];
  } else if (pc.mode == HIGHWAY) {
    const float g = sigmoid(a0[i] + b[c]);
    gate[i] = g;
    o[i] = g * x[i] + (1.0 - g) * y[i];
  } else if (pc.mode == GRU_RZ) {
    const float r = sigmoid(a0[i] + a1[i]);
    gate[i] = r;
    z_out[i] = sigmoid(a2[i] + a3[i] - b[c]);
    rx[i] = r * x[i];
  } else {  // GRU_OUT; tanh's argument clamped (drivers may build tanh from exp)
    const float h = tanh(clamp(a0[i] + a1[i], -15.0, 15.0));
    const float z = z_in[i];
    o[i] = (1.0 - z) * x[i] + z * h;
  }
}
