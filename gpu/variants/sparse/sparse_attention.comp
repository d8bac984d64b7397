#version 450
// Softmax attention over CSR nonzeros (core/variants/sparse/sparse_attention.h; host reference
// sparse_attention() in core/variants/sparse/sparse_attention.cpp). One workgroup of 64 invocations per
// (query row i, head h); row i of head h's pattern holds the keys indices[base + n] for
// n in [indptr[h (Lq + 1) + i], indptr[h (Lq + 1) + i + 1]), base = head_base[h]:
//   1. s_n = scale q_i . k_j, staged in probs (invocation t owns n = t, t + 64, ...)
//   2. row max, 3. p_n = exp(s_n - max) / sum
//   4. after a buffer barrier, invocation t owns value dims d = t, t + 64, ...:
//      o_d = sum_n p_n v_{j_n, d}
// O(nnz d) work and O(nnz) memory; a row without nonzeros gets a zero output.
#include "common.glsl"
#include "wg_tree_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer Indptr { uint indptr[]; };
layout(std430, set = 0, binding = 4) readonly buffer Indices { uint indices[]; };
layout(std430, set = 0, binding = 5) readonly buffer HeadBase { uint head_base[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 7) coherent buffer Probs { float probs[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh; uint dv;
  float scale;
} pc;

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint qk_stride = pc.heads * pc.dh, v_stride = pc.heads * pc.dv;
  const uint qoff = i * qk_stride + h * pc.dh;
  const uint base = head_base[h];
  const uint b = base + indptr[h * (pc.lq + 1u) + i], e = base + indptr[h * (pc.lq + 1u) + i + 1u];

  float mx = NEG_BIG;
  for (uint n = b + t; n < e; n += WG) {
    const uint koff = indices[n] * qk_stride + h * pc.dh;
    float dot = 0.0;
    for (uint c = 0u; c < pc.dh; ++c) dot += q[qoff + c] * k[koff + c];
    const float s = dot * pc.scale;
    probs[n] = s;
    mx = max(mx, s);
  }
  mx = reduce_max(mx);
  float sum = 0.0;
  for (uint n = b + t; n < e; n += WG) {
    const float p = exp(max(probs[n] - mx, -87.0));
    probs[n] = p;
    sum += p;
  }
  sum = reduce_sum(sum);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (uint n = b + t; n < e; n += WG) probs[n] *= inv;
  memoryBarrierBuffer();
  barrier();  // every probability of the row is written before any invocation reads them all

  for (uint d = t; d < pc.dv; d += WG) {
    float acc = 0.0;
    for (uint n = b; n < e; ++n) acc += probs[n] * v[indices[n] * v_stride + h * pc.dv + d];
    o[i * v_stride + h * pc.dv + d] = acc;
  }
}
