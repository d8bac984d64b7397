#version 450
// ALiBi attention (the alibi_attention op, core/variants/alibi/alibi_attention_op.h; host
// reference alibi_attention_op.cpp). One workgroup of 64 invocations per (query row i, head h);
// invocation t owns keys j = t, t + 64, ...:
//   1. e_j = scale q_i . k_j - m_h |i + Lk - Lq - j|, -inf where the mask forbids j; staged in
//      probs (and scores when asked)
//   2. row max over the allowed keys; 3. a_j = exp(e_j - max) / sum (zeros when none allowed),
//      each invocation rewriting only its own keys
//   4. after a buffer barrier, invocation t owns value dims d = t, t + 64, ...: o_d = sum_j a_j v_jd
#include "common.glsl"
#include "wg_tree_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer KeyValid { uint key_valid[]; };
layout(std430, set = 0, binding = 4) readonly buffer Allowed { uint allowed[]; };
layout(std430, set = 0, binding = 5) readonly buffer Slopes { float slopes[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 7) coherent buffer Probs { float probs[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Scores { float scores[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh; uint dv;
  uint flags;
  int causal_offset;
  float scale;
} pc;

const uint KEY_VALID = 1u, ALLOWED = 2u, CAUSAL = 4u, WANT_SCORES = 8u;

bool key_allowed(uint i, uint j) {
  if ((pc.flags & CAUSAL) != 0u && int(j) - int(i) > pc.causal_offset) return false;
  if ((pc.flags & KEY_VALID) != 0u && key_valid[j] == 0u) return false;
  if ((pc.flags & ALLOWED) != 0u) {
    const uint idx = i * pc.lk + j;
    if (((allowed[idx >> 5u] >> (idx & 31u)) & 1u) == 0u) return false;
  }
  return true;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint qk_stride = pc.heads * pc.dh, v_stride = pc.heads * pc.dv;
  const uint qoff = i * qk_stride + h * pc.dh;
  const uint prow = (h * pc.lq + i) * pc.lk;
  const float neg_inf = uintBitsToFloat(NEG_INF_BITS);
  const float slope = slopes[h];
  const int pos = int(i) + int(pc.lk) - int(pc.lq);  // queries are the last Lq key positions

  // 1. scores, staged in probs; 2. the row maximum.
  float mx = NEG_BIG;
  for (uint j = t; j < pc.lk; j += WG) {
    float dot = 0.0;
    const uint koff = j * qk_stride + h * pc.dh;
    for (uint e = 0u; e < pc.dh; ++e) dot += q[qoff + e] * k[koff + e];
    const bool ok = key_allowed(i, j);
    const float bias = -(slope * float(abs(pos - int(j))));
    const float s = ok ? dot * pc.scale + bias : neg_inf;
    probs[prow + j] = s;
    if ((pc.flags & WANT_SCORES) != 0u) scores[prow + j] = s;
    if (ok) mx = max(mx, s);
  }
  mx = reduce_max(mx);
  const bool empty = mx == NEG_BIG;  // no allowed key: a zero row (the CPU rule)

  // 3. weights.
  float sum = 0.0;
  for (uint j = t; j < pc.lk; j += WG) {
    const float s = probs[prow + j];
    const bool ok = floatBitsToUint(s) != NEG_INF_BITS;
    const float p = (!empty && ok) ? exp(max(s - mx, -87.0)) : 0.0;
    probs[prow + j] = p;
    sum += p;
  }
  sum = reduce_sum(sum);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (uint j = t; j < pc.lk; j += WG) probs[prow + j] *= inv;
  memoryBarrierBuffer();
  barrier();  // every weight of the row is written before any invocation reads them all

  // 4. output.
  for (uint d = t; d < pc.dv; d += WG) {
    float acc = 0.0;
    for (uint j = 0u; j < pc.lk; ++j) {
      const float a = probs[prow + j];
      if (a == 0.0) continue;
      acc += a * v[j * v_stride + h * pc.dv + d];
    }
    o[i * v_stride + h * pc.dv + d] = acc;
  }
}
