#version 450
// Performer FAVOR+ attention (core/variants/performer/performer_attention.h; host reference favor_attention in
// core/variants/performer/performer.cpp), in phases recorded as separate dispatches of 64-invocation workgroups:
//   FEAT_Q (query i, head h)  pq[h,i,r] = m^-1/2 exp(p_r - |x'|^2/2 - max_r p_r),
//                             p_r = w_r . x', x' = q_i / dk^(1/4)
//   FEAT_K (key j, head h)    pk[h,j,r] = p_r - |x'|^2/2 (raw), kmax[h,j] = max_r p_r
//   K_EXP  (key j, head h)    pk[h,j,r] = m^-1/2 exp(raw - max over all keys of kmax), 0 for
//                             padded keys
//   KV     (feature r, head h) kv[h,r,c] = sum_j pk[h,j,r] v_jc, z[h,r] = sum_j pk[h,j,r]
//   OUT    (query i, head h)  o_ic = sum_r pq[h,i,r] kv[h,r,c] / sum_r pq[h,i,r] z[h,r]
//   ROW    (query i, head h)  a_j = pq_i . pk_j (0 for j > i when causal), normalised by the
//                             row sum into `implicit`, then o_ic = sum_j a_j v_jc
// Bidirectional without the implicit matrix uses KV + OUT (linear in L); causal attention and
// the implicit matrix use ROW (quadratic in L: the prefix-sum scan of the host is sequential
// over positions, which a per-row form avoids at the price of L^2 m work).
#include "common.glsl"
#include "wg_tree_reduce.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer W { float w[]; };  // [H, m, dk]
layout(std430, set = 0, binding = 4) readonly buffer KeyValid { uint key_valid[]; };
layout(std430, set = 0, binding = 5) buffer PQ { float pq[]; };    // [H, Lq, m]
layout(std430, set = 0, binding = 6) buffer PK { float pk[]; };    // [H, Lk, m]
layout(std430, set = 0, binding = 7) buffer KMax { float kmax[]; };  // [H, Lk]
layout(std430, set = 0, binding = 8) buffer KV { float kv[]; };    // [H, m, dv]
layout(std430, set = 0, binding = 9) buffer Z { float z[]; };      // [H, m]
layout(std430, set = 0, binding = 10) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 11) coherent buffer Implicit { float implicit[]; };  // [H, Lq, Lk]
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dk; uint dv; uint m;
  uint phase;
  uint flags;
} pc;

const uint FEAT_Q = 0u, FEAT_K = 1u, K_EXP = 2u, KV_SUM = 3u, OUT = 4u, ROW = 5u;
const uint CAUSAL = 1u, KEY_VALID = 2u;

// Writes p_r - |x'|^2/2 (minus the row max when subtract_max) for row `row` of x (q or k),
// returns max_r p_r. Every invocation must call it (it reduces).
float project_row(bool is_query, uint row, uint h, uint dst, bool subtract_max) {
  const uint t = gl_LocalInvocationID.x;
  const float s = pow(float(pc.dk), -0.25);
  const uint xoff = row * pc.heads * pc.dk + h * pc.dk;
  float hn = 0.0;
  for (uint e = 0u; e < pc.dk; ++e) {
    const float x = (is_query ? q[xoff + e] : k[xoff + e]) * s;
    hn += x * x;
  }
  hn *= 0.5;
  float mx = NEG_BIG;
  for (uint r = t; r < pc.m; r += WG) {
    float p = 0.0;
    const uint woff = (h * pc.m + r) * pc.dk;
    for (uint e = 0u; e < pc.dk; ++e) p += (is_query ? q[xoff + e] : k[xoff + e]) * s * w[woff + e];
    mx = max(mx, p);
    if (is_query) pq[dst + r] = p - hn; else pk[dst + r] = p - hn;
  }
  mx = reduce_max(mx);
  if (subtract_max) {
    const float norm = inversesqrt(float(pc.m));
    for (uint r = t; r < pc.m; r += WG) pq[dst + r] = norm * exp(pq[dst + r] - mx);
  }
  return mx;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint a = gl_WorkGroupID.x, h = gl_WorkGroupID.y;
  const float norm = inversesqrt(float(pc.m));
  if (pc.phase == FEAT_Q) {
    project_row(true, a, h, (h * pc.lq + a) * pc.m, true);
  } else if (pc.phase == FEAT_K) {
    const float mx = project_row(false, a, h, (h * pc.lk + a) * pc.m, false);
    if (t == 0u) kmax[h * pc.lk + a] = mx;
  } else if (pc.phase == K_EXP) {
    float g = NEG_BIG;
    for (uint j = t; j < pc.lk; j += WG) g = max(g, kmax[h * pc.lk + j]);
    g = reduce_max(g);
    const bool valid = (pc.flags & KEY_VALID) == 0u || key_valid[a] != 0u;
    const uint off = (h * pc.lk + a) * pc.m;
    for (uint r = t; r < pc.m; r += WG) pk[off + r] = valid ? norm * exp(pk[off + r] - g) : 0.0;
  } else if (pc.phase == KV_SUM) {
    const uint r = a;
    for (uint c = t; c < pc.dv; c += WG) {
      float acc = 0.0;
      for (uint j = 0u; j < pc.lk; ++j)
        acc += pk[(h * pc.lk + j) * pc.m + r] * v[j * pc.heads * pc.dv + h * pc.dv + c];
      kv[(h * pc.m + r) * pc.dv + c] = acc;
    }
    if (t == 0u) {
      float acc = 0.0;
      for (uint j = 0u; j < pc.lk; ++j) acc += pk[(h * pc.lk + j) * pc.m + r];
      z[h * pc.m + r] = acc;
    }
  } else if (pc.phase == OUT) {
    const uint i = a, qoff = (h * pc.lq + i) * pc.m;
    float part = 0.0;
    for (uint r = t; r < pc.m; r += WG) part += pq[qoff + r] * z[h * pc.m + r];
    const float den = reduce_sum(part);
    const float inv = den > 0.0 ? 1.0 / den : 1.0;
    for (uint c = t; c < pc.dv; c += WG) {
      float acc = 0.0;
      for (uint r = 0u; r < pc.m; ++r) acc += pq[qoff + r] * kv[(h * pc.m + r) * pc.dv + c];
      o[i * pc.heads * pc.dv + h * pc.dv + c] = acc * inv;
    }
  } else {  // ROW
    const uint i = a, qoff = (h * pc.lq + i) * pc.m, row = (h * pc.lq + i) * pc.lk;
    const bool causal = (pc.flags & CAUSAL) != 0u;
    float sum = 0.0;
    for (uint j = t; j < pc.lk; j += WG) {
      float s = 0.0;
      if (!causal || j <= i) {
        const uint koff = (h * pc.lk + j) * pc.m;
        for (uint r = 0u; r < pc.m; ++r) s += pq[qoff + r] * pk[koff + r];
      }
      implicit[row + j] = s;
      sum += s;
    }
    sum = reduce_sum(sum);
    const float inv = sum > 0.0 ? 1.0 / sum : 1.0;
    for (uint j = t; j < pc.lk; j += WG) implicit[row + j] *= inv;
    memoryBarrierBuffer();
    barrier();
    for (uint c = t; c < pc.dv; c += WG) {
      float acc = 0.0;
      for (uint j = 0u; j < pc.lk; ++j) {
        const float w_ij = implicit[row + j];
        if (w_ij != 0.0) acc += w_ij * v[j * pc.heads * pc.dv + h * pc.dv + c];
      }
      o[i * pc.heads * pc.dv + h * pc.dv + c] = acc;
    }
  }
}
