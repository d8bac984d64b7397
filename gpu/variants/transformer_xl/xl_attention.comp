#version 450
// Transformer-XL relative attention of one layer (core/variants/transformer_xl/xl_attention_op.h; host
// reference core/variants/transformer_xl/xl_attention_op.cpp). Keys are m = Lk - Lq memory rows then the Lq current
// rows; query i sits at key position p = m + i. One workgroup of 64 invocations per (query
// row i, head h); invocation t owns keys j = t, t + 64, ...:
//   1. for visible keys (j <= p, and j > p - mem_len with same_length), with
//      r = rk[min(p - j, clamp_len)]:  s_j = scale [(q_i + u_h) . k_j + (q_i + v_h) . r]
//      (the four terms a = q.k, b = q.r, c = u.k, d = v.r separately when asked); -inf else.
//      The position term is looked up per (i, j), so no rel_shift and no garbage entries.
//   2. row max, 3. softmax weights (the diagonal key is always visible: no empty rows),
//   4. after a buffer barrier, invocation t owns value dims d = t, t + 64, ...
#include "common.glsl"
#include "wg_tree_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer RK { float rk[]; };
layout(std430, set = 0, binding = 4) readonly buffer U { float u[]; };
layout(std430, set = 0, binding = 5) readonly buffer VB { float vb[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 7) coherent buffer Probs { float probs[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Scores { float scores[]; };
layout(std430, set = 0, binding = 9) writeonly buffer TermA { float term_a[]; };
layout(std430, set = 0, binding = 10) writeonly buffer TermB { float term_b[]; };
layout(std430, set = 0, binding = 11) writeonly buffer TermC { float term_c[]; };
layout(std430, set = 0, binding = 12) writeonly buffer TermD { float term_d[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh;
  uint flags;
  int mem_len;
  int clamp_len;
  float scale;
} pc;

const uint SAME_LENGTH = 1u, WANT_TERMS = 2u;

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint stride = pc.heads * pc.dh;
  const uint qoff = i * stride + h * pc.dh, hoff = h * pc.dh;
  const uint prow = (h * pc.lq + i) * pc.lk;
  const int p = int(pc.lk - pc.lq + i);
  const bool terms = (pc.flags & WANT_TERMS) != 0u;
  const bool same_length = (pc.flags & SAME_LENGTH) != 0u;
  const float neg_inf = uintBitsToFloat(NEG_INF_BITS);

  // 1. scores, staged in probs; 2. the row maximum.
  float mx = NEG_BIG;
  for (uint j = t; j < pc.lk; j += WG) {
    const bool visible = int(j) <= p && (!same_length || int(j) > p - pc.mem_len);
    float s = neg_inf, a = 0.0, b = 0.0, c = 0.0, d = 0.0;
    if (visible) {
      int dist = p - int(j);
      if (pc.clamp_len >= 0) dist = min(dist, pc.clamp_len);
      const uint koff = j * stride + hoff, roff = uint(dist) * stride + hoff;
      if (terms) {
        for (uint e = 0u; e < pc.dh; ++e) {
          const float qe = q[qoff + e], ke = k[koff + e], re = rk[roff + e];
          a += qe * ke;
          b += qe * re;
          c += u[hoff + e] * ke;
          d += vb[hoff + e] * re;
        }
        s = (a + b + c + d) * pc.scale;
      } else {
        float ac = 0.0, bd = 0.0;
        for (uint e = 0u; e < pc.dh; ++e) {
          const float qe = q[qoff + e];
          ac += (qe + u[hoff + e]) * k[koff + e];
          bd += (qe + vb[hoff + e]) * rk[roff + e];
        }
        s = (ac + bd) * pc.scale;
      }
      mx = max(mx, s);
    }
    probs[prow + j] = s;
    if (terms) {
      scores[prow + j] = s;
      term_a[prow + j] = a * pc.scale;
      term_b[prow + j] = b * pc.scale;
      term_c[prow + j] = c * pc.scale;
      term_d[prow + j] = d * pc.scale;
    }
  }
  mx = reduce_max(mx);

  // 3. weights.
  float sum = 0.0;
  for (uint j = t; j < pc.lk; j += WG) {
    const float s = probs[prow + j];
    const float w = floatBitsToUint(s) == NEG_INF_BITS ? 0.0 : exp(max(s - mx, -87.0));
    probs[prow + j] = w;
    sum += w;
  }
  sum = reduce_sum(sum);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (uint j = t; j < pc.lk; j += WG) probs[prow + j] *= inv;
  memoryBarrierBuffer();
  barrier();  // every weight of the row is written before any invocation reads them all

  // 4. output.
  for (uint e = t; e < pc.dh; e += WG) {
    float acc = 0.0;
    for (uint j = 0u; j < pc.lk; ++j) {
      const float w = probs[prow + j];
      if (w != 0.0) acc += w * v[j * stride + hoff + e];
    }
    o[qoff + e] = acc;
  }
}
