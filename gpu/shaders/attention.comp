#version 450
// Masked softmax attention, tiled like a matmul (flash-attention style). A workgroup of 64
// invocations owns BR = 16 query rows of one head and walks the keys in blocks of BC = 64:
//   S = scale * Q K^T        16 x 64 tile; each invocation 4 rows x 4 keys, d_head in
//                            chunks of 32 staged through shared memory
//   mask                     causal (with offset), key padding, dense pattern (bits)
//   online softmax           per row a running max m and sum l; the output accumulator is
//                            rescaled by exp(m_old - m_new) when the max grows
//   O += P V                 each invocation 4 rows x 4 of a 64-wide chunk of d_value
// So any Lk works with fixed shared memory (14.8 KiB, under Vulkan's 16 KiB minimum), and
// nothing of size Lq x Lk exists unless probabilities or scores were asked for. d_value
// above 64 is done in further passes over the keys (scores are recomputed, not rewritten).
// A row with no allowed key gets probabilities 0 and output 0 (the CPU backend's rule);
// masked scores are -inf. For probabilities, raw scores are staged in the probs buffer and
// turned into probabilities at the end with the final m and l; every invocation re-reads
// exactly the entries it wrote, so no cross-invocation buffer visibility is needed.
#include "common.glsl"
#define BR 16u
#define BC 64u
#define DK 32u
#define DVC 64u
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer KeyValid { uint key_valid[]; };
layout(std430, set = 0, binding = 4) readonly buffer Allowed { uint allowed[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 6) buffer Probs { float probs[]; };
layout(std430, set = 0, binding = 7) writeonly buffer Scores { float scores[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh; uint dv;
  uint head0; uint row0; uint row_end;
  uint flags;
  int causal_offset;
  float scale;
  uint probs_base; uint scores_base;
  int window;
} pc;

const uint KEY_VALID = 1u, ALLOWED = 2u, WANT_PROBS = 4u, WANT_SCORES = 8u, CAUSAL = 16u;

shared float q_sh[BR * DK];
shared float k_sh[BC * (DK + 1u)];  // +1: neighbouring invocations read different banks
shared float s_sh[BR * (BC + 1u)];  // scores, then probabilities of the block
shared float m_sh[BR];
shared float l_sh[BR];
shared float alpha_sh[BR];

bool key_allowed(uint i, uint j) {
  if ((pc.flags & CAUSAL) != 0u && int(j) - int(i) > pc.causal_offset) return false;
  // The sliding window: only the last `window` keys up to the query's own position.
  if ((pc.flags & CAUSAL) != 0u && pc.window > 0 && int(j) - int(i) <= pc.causal_offset - pc.window) return false;
  if ((pc.flags & KEY_VALID) != 0u && key_valid[j] == 0u) return false;
  if ((pc.flags & ALLOWED) != 0u) {
    const uint idx = i * pc.lk + j;
    if (((allowed[idx >> 5u] >> (idx & 31u)) & 1u) == 0u) return false;
  }
  return true;
}

bool is_masked(float s) { return floatBitsToUint(s) == NEG_INF_BITS; }

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint tr = t / 16u, tc = t % 16u;  // rows tr + 4a, keys / value dims tc + 16b
  const uint i0 = pc.row0 + gl_WorkGroupID.x * BR;
  const uint h = pc.head0 + gl_WorkGroupID.y;
  const uint qk_stride = pc.heads * pc.dh, v_stride = pc.heads * pc.dv;
  const bool want_probs = (pc.flags & WANT_PROBS) != 0u;
  const bool want_scores = (pc.flags & WANT_SCORES) != 0u;
  const float neg_inf = uintBitsToFloat(NEG_INF_BITS);
  // Last valid row of the tile, for skipping key blocks the causal mask hides entirely.
  const uint i_last = min(i0 + BR, pc.row_end) - 1u;

  for (uint dc0 = 0u; dc0 < max(pc.dv, 1u); dc0 += DVC) {
    const bool first_pass = dc0 == 0u;
    float acc[4][4];
    for (uint a = 0u; a < 4u; ++a)
      for (uint b = 0u; b < 4u; ++b) acc[a][b] = 0.0;
    if (t < BR) {
      m_sh[t] = NEG_BIG;
      l_sh[t] = 0.0;
    }

    for (uint c0 = 0u; c0 < pc.lk; c0 += BC) {
      const uint cn = min(BC, pc.lk - c0);
      const bool after_every_query = (pc.flags & CAUSAL) != 0u && int(c0) - int(i_last) > pc.causal_offset;
      const bool before_every_window = (pc.flags & CAUSAL) != 0u && pc.window > 0 &&
                                       int(c0 + cn - 1u) - int(i0) <= pc.causal_offset - pc.window;
      if (after_every_query || before_every_window) {
        // Every key of this block is after every query of the tile, or before every query's
        // window: all masked.
        if (first_pass && (want_probs || want_scores)) {
          for (uint a = 0u; a < 4u; ++a) {
            const uint i = i0 + tr + 4u * a;
            if (i >= pc.row_end) continue;
            const uint prow = (h * pc.lq + i) * pc.lk;
            for (uint b = 0u; b < 4u; ++b) {
              const uint j = c0 + tc + 16u * b;
              if (j >= pc.lk) continue;
              if (want_scores) scores[prow + j - pc.scores_base] = neg_inf;
              if (want_probs) probs[prow + j - pc.probs_base] = neg_inf;
            }
          }
        }
        continue;
      }

      // S = Q K^T for the 16 x 64 tile.
      float s[4][4];
      for (uint a = 0u; a < 4u; ++a)
        for (uint b = 0u; b < 4u; ++b) s[a][b] = 0.0;
      for (uint e0 = 0u; e0 < pc.dh; e0 += DK) {
        for (uint p = 0u; p < (BR * DK) / 64u; ++p) {
          const uint idx = t + 64u * p, r = idx / DK, e = idx % DK;
          const uint i = i0 + r;
          q_sh[idx] = (i < pc.row_end && e0 + e < pc.dh) ? q[i * qk_stride + h * pc.dh + e0 + e] : 0.0;
        }
        for (uint p = 0u; p < (BC * DK) / 64u; ++p) {
          const uint idx = t + 64u * p, jj = idx / DK, e = idx % DK;
          const uint j = c0 + jj;
          k_sh[jj * (DK + 1u) + e] = (j < pc.lk && e0 + e < pc.dh) ? k[j * qk_stride + h * pc.dh + e0 + e] : 0.0;
        }
        memoryBarrierShared();
        barrier();
        for (uint e = 0u; e < DK; ++e) {
          float qa[4], kb[4];
          for (uint a = 0u; a < 4u; ++a) qa[a] = q_sh[(tr + 4u * a) * DK + e];
          for (uint b = 0u; b < 4u; ++b) kb[b] = k_sh[(tc + 16u * b) * (DK + 1u) + e];
          for (uint a = 0u; a < 4u; ++a)
            for (uint b = 0u; b < 4u; ++b) s[a][b] += qa[a] * kb[b];
        }
        barrier();  // q_sh / k_sh are refilled by the next chunk
      }

      // Scale and mask; stage raw scores for the outputs.
      for (uint a = 0u; a < 4u; ++a) {
        const uint r = tr + 4u * a, i = i0 + r;
        const uint prow = (h * pc.lq + i) * pc.lk;
        for (uint b = 0u; b < 4u; ++b) {
          const uint jj = tc + 16u * b, j = c0 + jj;
          float val = neg_inf;
          if (i < pc.row_end && j < pc.lk && key_allowed(i, j)) val = s[a][b] * pc.scale;
          s_sh[r * (BC + 1u) + jj] = val;
          if (first_pass && i < pc.row_end && j < pc.lk) {
            if (want_scores) scores[prow + j - pc.scores_base] = val;
            if (want_probs) probs[prow + j - pc.probs_base] = val;
          }
        }
      }
      memoryBarrierShared();
      barrier();

      // Online softmax, one invocation per row.
      if (t < BR) {
        float cmax = NEG_BIG;
        for (uint jj = 0u; jj < cn; ++jj) {
          const float sv = s_sh[t * (BC + 1u) + jj];
          if (!is_masked(sv)) cmax = max(cmax, sv);
        }
        const float m_old = m_sh[t];
        const float m_new = max(m_old, cmax);
        float sum = 0.0;
        for (uint jj = 0u; jj < cn; ++jj) {
          const float sv = s_sh[t * (BC + 1u) + jj];
          // The clamp keeps exp() in its accurate range; exp(-87) ~ 1.6e-38 is nothing
          // next to l >= 1.
          const float p = is_masked(sv) ? 0.0 : exp(max(sv - m_new, -87.0));
          s_sh[t * (BC + 1u) + jj] = p;
          sum += p;
        }
        const float alpha = m_old == NEG_BIG ? 0.0 : exp(max(m_old - m_new, -87.0));
        m_sh[t] = m_new;
        l_sh[t] = l_sh[t] * alpha + sum;
        alpha_sh[t] = alpha;
      }
      memoryBarrierShared();
      barrier();

      // O = alpha O + P V for this chunk of value dimensions.
      float al[4];
      for (uint a = 0u; a < 4u; ++a) al[a] = alpha_sh[tr + 4u * a];
      for (uint a = 0u; a < 4u; ++a)
        for (uint b = 0u; b < 4u; ++b) acc[a][b] *= al[a];
      for (uint jj = 0u; jj < cn; ++jj) {
        const uint vrow = (c0 + jj) * v_stride + h * pc.dv;
        float pa[4], vb[4];
        for (uint a = 0u; a < 4u; ++a) pa[a] = s_sh[(tr + 4u * a) * (BC + 1u) + jj];
        for (uint b = 0u; b < 4u; ++b) {
          const uint d = dc0 + tc + 16u * b;
          vb[b] = d < pc.dv ? v[vrow + d] : 0.0;
        }
        for (uint a = 0u; a < 4u; ++a)
          for (uint b = 0u; b < 4u; ++b) acc[a][b] += pa[a] * vb[b];
      }
      barrier();  // s_sh, m_sh, alpha_sh are rewritten by the next block
    }

    // Normalise and write this chunk of the output.
    for (uint a = 0u; a < 4u; ++a) {
      const uint r = tr + 4u * a, i = i0 + r;
      if (i >= pc.row_end) continue;
      const float l = l_sh[r];
      const float inv = l > 0.0 ? 1.0 / l : 0.0;
      for (uint b = 0u; b < 4u; ++b) {
        const uint d = dc0 + tc + 16u * b;
        if (d < pc.dv) o[i * v_stride + h * pc.dv + d] = acc[a][b] * inv;
      }
    }
    barrier();  // m_sh / l_sh are reset by the next pass
  }

  if (want_probs) {
    // m_sh / l_sh hold the final statistics (every pass computes the same ones).
    for (uint a = 0u; a < 4u; ++a) {
      const uint r = tr + 4u * a, i = i0 + r;
      if (i >= pc.row_end) continue;
      const float m = m_sh[r], l = l_sh[r];
      const float inv = l > 0.0 ? 1.0 / l : 0.0;
      const uint prow = (h * pc.lq + i) * pc.lk;
      for (uint j = tc; j < pc.lk; j += 16u) {
        const uint idx = prow + j - pc.probs_base;
        const float sv = probs[idx];
        probs[idx] = is_masked(sv) ? 0.0 : exp(max(sv - m, -87.0)) * inv;
      }
    }
  }
}
