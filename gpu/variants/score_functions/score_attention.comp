#version 450
// Seed 004's score functions other than scaled dot (core/variants/score_functions/score_attention.h;
// host reference core/variants/score_functions/score_attention_op.cpp). One workgroup of 64 invocations per (query row i,
// head h). First the query-side vector the function needs is staged in shared memory
// (general: q_i W_h; additive: W1_h q_i), then invocation t owns keys j = t, t + 64, ...:
//   dot      e_j = q_i . k_j
//   general  e_j = (q_i W_h) . k_j
//   cosine   e_j = beta q_i . k_j / max(|q_i| |k_j|, 1e-8)
//   location e_j = W_h[j] . q_i            (keys unused)
//   additive e_j = v_h . tanh(W1_h q_i + W2_h k_j)
// -inf where the mask forbids j, a row softmax (zero row when no key is allowed), and after a
// buffer barrier invocation t owns value dims d = t, t + 64, ... of o_i = sum_j a_j v_j.
// Additive runs a first dispatch with PROJECT_KEYS over (key j, head h) workgroups that writes
// W2_h k_j to binding 12, so the attention dispatch does d_attn work per (i, j), not
// d_attn x d_head.
#include "common.glsl"
#include "wg_tree_reduce.glsl"
#define MAX_VEC 256u
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer KeyValid { uint key_valid[]; };
layout(std430, set = 0, binding = 4) readonly buffer Allowed { uint allowed[]; };
layout(std430, set = 0, binding = 5) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 6) readonly buffer W1 { float w1[]; };
layout(std430, set = 0, binding = 7) readonly buffer W2 { float w2[]; };
layout(std430, set = 0, binding = 8) readonly buffer VA { float va[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 10) coherent buffer Probs { float probs[]; };
layout(std430, set = 0, binding = 11) writeonly buffer Scores { float scores[]; };
layout(std430, set = 0, binding = 12) buffer KeyProj { float wk[]; };  // [Lk, heads, d_attn]
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh;
  uint flags;
  int causal_offset;
  uint function;
  uint d_attn;
  uint max_positions;
  float strength;
} pc;

const uint KEY_VALID = 1u, ALLOWED = 2u, CAUSAL = 4u, WANT_SCORES = 8u, PROJECT_KEYS = 16u;
// Mirrors ScoreFunction in core/variants/score_functions/score_functions_config.h.
const uint DOT = 1u, GENERAL = 2u, ADDITIVE = 3u, COSINE = 4u, LOCATION = 5u;

shared float qx[MAX_VEC];

bool key_allowed(uint i, uint j) {
  if ((pc.flags & CAUSAL) != 0u && int(j) - int(i) > pc.causal_offset) return false;
  if ((pc.flags & KEY_VALID) != 0u && key_valid[j] == 0u) return false;
  if ((pc.flags & ALLOWED) != 0u) {
    const uint idx = i * pc.lk + j;
    if (((allowed[idx >> 5u] >> (idx & 31u)) & 1u) == 0u) return false;
  }
  return true;
}

void project_keys(uint j, uint h) {
  const uint koff = j * pc.heads * pc.dh + h * pc.dh;
  for (uint a = gl_LocalInvocationID.x; a < pc.d_attn; a += WG) {
    float s = 0.0;
    const uint row = (h * pc.d_attn + a) * pc.dh;
    for (uint e = 0u; e < pc.dh; ++e) s += w2[row + e] * k[koff + e];
    wk[(j * pc.heads + h) * pc.d_attn + a] = s;
  }
}

void main() {
  if ((pc.flags & PROJECT_KEYS) != 0u) {
    project_keys(gl_WorkGroupID.x, gl_WorkGroupID.y);
    return;
  }
  const uint t = gl_LocalInvocationID.x;
  const uint i = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const uint stride = pc.heads * pc.dh, hoff = h * pc.dh;
  const uint qoff = i * stride + hoff;
  const uint prow = (h * pc.lq + i) * pc.lk;
  const float neg_inf = uintBitsToFloat(NEG_INF_BITS);

  // The query-side vector: general (q W_h)_b, additive (W1_h q)_a.
  if (pc.function == GENERAL) {
    for (uint b = t; b < pc.dh; b += WG) {
      float s = 0.0;
      for (uint a = 0u; a < pc.dh; ++a) s += q[qoff + a] * w[(hoff + a) * pc.dh + b];
      qx[b] = s;
    }
  } else if (pc.function == ADDITIVE) {
    for (uint a = t; a < pc.d_attn; a += WG) {
      float s = 0.0;
      for (uint e = 0u; e < pc.dh; ++e) s += w1[(h * pc.d_attn + a) * pc.dh + e] * q[qoff + e];
      qx[a] = s;
    }
  }
  memoryBarrierShared();
  barrier();
  float qnorm = 0.0;
  if (pc.function == COSINE) {
    for (uint e = 0u; e < pc.dh; ++e) qnorm += q[qoff + e] * q[qoff + e];
    qnorm = sqrt(qnorm);
  }

  // 1. scores, staged in probs; 2. the row maximum.
  float mx = NEG_BIG;
  for (uint j = t; j < pc.lk; j += WG) {
    float s = neg_inf;
    if (key_allowed(i, j)) {
      const uint koff = j * stride + hoff;
      s = 0.0;
      if (pc.function == DOT) {
        for (uint e = 0u; e < pc.dh; ++e) s += q[qoff + e] * k[koff + e];
      } else if (pc.function == GENERAL) {
        for (uint e = 0u; e < pc.dh; ++e) s += qx[e] * k[koff + e];
      } else if (pc.function == COSINE) {
        float kn = 0.0;
        for (uint e = 0u; e < pc.dh; ++e) {
          s += q[qoff + e] * k[koff + e];
          kn += k[koff + e] * k[koff + e];
        }
        s *= pc.strength / max(qnorm * sqrt(kn), 1e-8);
      } else if (pc.function == LOCATION) {
        const uint woff = (h * pc.max_positions + j) * pc.dh;
        for (uint e = 0u; e < pc.dh; ++e) s += w[woff + e] * q[qoff + e];
      } else {  // ADDITIVE
        const uint wkoff = (j * pc.heads + h) * pc.d_attn;
        for (uint a = 0u; a < pc.d_attn; ++a) {
          const float x = qx[a] + wk[wkoff + a];
          // Clamped: some drivers build tanh from exp, which overflows to NaN for large |x|;
          // tanh(15) is 1 in float anyway.
          s += va[h * pc.d_attn + a] * tanh(clamp(x, -15.0, 15.0));
        }
      }
      mx = max(mx, s);
    }
    probs[prow + j] = s;
    if ((pc.flags & WANT_SCORES) != 0u) scores[prow + j] = s;
  }
  mx = reduce_max(mx);
  const bool empty = mx == NEG_BIG;

  // 3. weights.
  float sum = 0.0;
  for (uint j = t; j < pc.lk; j += WG) {
    const float s = probs[prow + j];
    const float p = (empty || floatBitsToUint(s) == NEG_INF_BITS) ? 0.0 : exp(max(s - mx, -87.0));
    probs[prow + j] = p;
    sum += p;
  }
  sum = reduce_sum(sum);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (uint j = t; j < pc.lk; j += WG) probs[prow + j] *= inv;
  memoryBarrierBuffer();
  barrier();

  // 4. output.
  for (uint e = t; e < pc.dh; e += WG) {
    float acc = 0.0;
    for (uint j = 0u; j < pc.lk; ++j) {
      const float a = probs[prow + j];
      if (a != 0.0) acc += a * v[j * stride + hoff + e];
    }
    o[qoff + e] = acc;
  }
}
