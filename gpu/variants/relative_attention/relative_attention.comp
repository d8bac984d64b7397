#version 450
// Shaw relative positions and / or the adaptive-span soft mask (the relative_attention op,
// core/variants/relative_attention/relative_attention_op.h; host reference
// relative_attention_op.cpp). One workgroup of 64
// invocations per (query row i, head h); invocation t owns keys j = t, t + 64, ...:
//   1. e_j = scale (q_i . k_j + [shaw] q_i . a^K_r(i,j)), -inf where the hard mask forbids j;
//      m_j = m_z(|i + Lk - Lq - j|) (span); e_j staged in probs (and scores, key term, mask)
//   2. row max over the keys that take part (m_j > 0 with span inside, allowed otherwise)
//   3. weights: inside  a_j = m_j exp(e_j - max) / sum
//               after   a_j = p_j m_j / (sum p m + 1e-8), p = softmax(e)
//      each invocation rewrites only its own keys, so no cross-invocation visibility is needed
//   4. after a buffer barrier, invocation t owns value dims d = t, t + 64, ...:
//      o_d = sum_j a_j v_jd + [shaw] sum_j a_j a^V_r(i,j) d
// The scores are recomputed per row, not tiled: the variants that need this run at moderate
// lengths and the output (probabilities) is dense anyway.
#include "common.glsl"
#include "wg_tree_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer KeyValid { uint key_valid[]; };
layout(std430, set = 0, binding = 4) readonly buffer Allowed { uint allowed[]; };
layout(std430, set = 0, binding = 5) readonly buffer RelK { float rel_k[]; };
layout(std430, set = 0, binding = 6) readonly buffer RelV { float rel_v[]; };
layout(std430, set = 0, binding = 7) readonly buffer SpanZ { float span_z[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 9) coherent buffer Probs { float probs[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Scores { float scores[]; };
layout(std430, set = 0, binding = 11) writeonly buffer KeyTerm { float key_term[]; };
layout(std430, set = 0, binding = 12) writeonly buffer ValueTerm { float value_term[]; };
layout(std430, set = 0, binding = 13) writeonly buffer SpanMask { float span_mask[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh; uint dv;
  uint flags;
  int causal_offset;
  float scale;
  int max_distance;
  float span_ramp;
  int span_max;
  int span_offset;
} pc;

const uint KEY_VALID = 1u, ALLOWED = 2u, CAUSAL = 4u, SHAW = 8u, SPAN = 16u, SPAN_AFTER = 32u,
           WANT_SCORES = 64u, WANT_TERMS = 128u, WANT_SPAN_MASK = 256u;

bool key_allowed(uint i, uint j) {
  if ((pc.flags & CAUSAL) != 0u && int(j) - int(i) > pc.causal_offset) return false;
  if ((pc.flags & KEY_VALID) != 0u && key_valid[j] == 0u) return false;
  if ((pc.flags & ALLOWED) != 0u) {
    const uint idx = i * pc.lk + j;
    if (((allowed[idx >> 5u] >> (idx & 31u)) & 1u) == 0u) return false;
  }
  return true;
}

int pos_offset() { return int(pc.lk) - int(pc.lq); }  // queries are the last Lq key positions

uint shaw_row(uint i, uint j) {
  const int rel = clamp(int(j) - (int(i) + pos_offset()), -pc.max_distance, pc.max_distance);
  return uint(rel + pc.max_distance);
}

float soft_mask(float z, uint i, uint j) {
  const int x = abs(int(i) + pos_offset() - int(j));
  if (x > pc.span_max) return 0.0;
  return clamp((pc.span_ramp + z - float(x - pc.span_offset)) / pc.span_ramp, 0.0, 1.0);
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint qk_stride = pc.heads * pc.dh, v_stride = pc.heads * pc.dv;
  const uint qoff = i * qk_stride + h * pc.dh;
  const uint prow = (h * pc.lq + i) * pc.lk;
  const bool shaw = (pc.flags & SHAW) != 0u, span = (pc.flags & SPAN) != 0u;
  const bool after = span && (pc.flags & SPAN_AFTER) != 0u;
  const float neg_inf = uintBitsToFloat(NEG_INF_BITS);
  const float z = span ? span_z[h * pc.lq + i] : 0.0;

  // 1. scores, staged in probs; 2. the row maximum.
  float mx = NEG_BIG;
  for (uint j = t; j < pc.lk; j += WG) {
    float dot = 0.0, kt = 0.0;
    const uint koff = j * qk_stride + h * pc.dh;
    for (uint e = 0u; e < pc.dh; ++e) dot += q[qoff + e] * k[koff + e];
    if (shaw) {
      const uint roff = shaw_row(i, j) * pc.dh;
      for (uint e = 0u; e < pc.dh; ++e) kt += q[qoff + e] * rel_k[roff + e];
      if ((pc.flags & WANT_TERMS) != 0u) key_term[prow + j] = kt * pc.scale;
    }
    const bool ok = key_allowed(i, j);
    const float s = ok ? (dot + kt) * pc.scale : neg_inf;
    const float m = !ok ? 0.0 : (span ? soft_mask(z, i, j) : 1.0);
    probs[prow + j] = s;
    if ((pc.flags & WANT_SCORES) != 0u) scores[prow + j] = s;
    if ((pc.flags & WANT_SPAN_MASK) != 0u) span_mask[prow + j] = m;
    const bool takes_part = after ? ok : (span ? m > 0.0 : ok);
    if (takes_part) mx = max(mx, s);
  }
  mx = reduce_max(mx);
  const bool empty = mx == NEG_BIG;  // no key takes part: a zero row (the CPU rule)

  // 3. weights.
  float sum = 0.0;
  for (uint j = t; j < pc.lk; j += WG) {
    const float s = probs[prow + j];
    const bool ok = floatBitsToUint(s) != NEG_INF_BITS;
    float p = 0.0;
    if (!empty && ok) {
      const float m = span ? soft_mask(z, i, j) : 1.0;
      p = after ? exp(max(s - mx, -87.0)) : (m > 0.0 ? m * exp(max(s - mx, -87.0)) : 0.0);
    }
    probs[prow + j] = p;
    sum += p;
  }
  sum = reduce_sum(sum);
  if (after) {
    // p = softmax(e); a = p m / (sum p m + 1e-8)
    float msum = 0.0;
    for (uint j = t; j < pc.lk; j += WG) {
      const float p = sum > 0.0 ? probs[prow + j] / sum : 0.0;
      const float s = p == 0.0 ? 0.0 : p * soft_mask(z, i, j);
      probs[prow + j] = s;
      msum += s;
    }
    msum = reduce_sum(msum);
    const float inv = empty ? 0.0 : 1.0 / (msum + 1e-8);
    for (uint j = t; j < pc.lk; j += WG) probs[prow + j] *= inv;
  } else {
    const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
    for (uint j = t; j < pc.lk; j += WG) probs[prow + j] *= inv;
  }
  memoryBarrierBuffer();
  barrier();  // every weight of the row is written before any invocation reads them all

  // 4. output and Shaw value term.
  for (uint d = t; d < pc.dv; d += WG) {
    float acc = 0.0, vt = 0.0;
    for (uint j = 0u; j < pc.lk; ++j) {
      const float a = probs[prow + j];
      if (a == 0.0) continue;
      acc += a * v[j * v_stride + h * pc.dv + d];
      if (shaw) vt += a * rel_v[shaw_row(i, j) * pc.dv + d];
    }
    o[i * v_stride + h * pc.dv + d] = acc + vt;
    if (shaw && (pc.flags & WANT_TERMS) != 0u) value_term[(h * pc.lq + i) * pc.dv + d] = vt;
  }
}
