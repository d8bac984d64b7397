#version 450
// Sparse CSR attention in tiles (the Vulkan form of core/variants/sparse/block_sparse_attention.h;
// host reference sparse_attention() in core/variants/sparse/sparse_attention.cpp). The host cuts
// each head's rows into tiles of at most 64 rows with the union U of their keys, ascending
// (sparse_tiles). One workgroup per tile, one invocation per row. U is swept in chunks of KC keys
// whose key and value rows are staged in shared memory once for all the tile's rows; each row
// walks its own CSR keys alongside (both ascending, and U holds every one of them), so a key of
// the chunk is the row's exactly when it is the row's next CSR key, and the row's softmax runs
// online (running max m, sum l, rescaled accumulator):
//   s = scale q_i . k_j,  m' = max(m, s),  l = l e^(m - m') + e^(s - m'),  o = o e^(m - m') + e^(s - m') v_j
// With want_probs a second sweep writes p = e^(s - m) / l at each nonzero's CSR position.
// d_head and d_value up to MAXD; the host runs sparse_attention.comp beyond it.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { float k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { float v[]; };
layout(std430, set = 0, binding = 3) readonly buffer Indptr { uint indptr[]; };
layout(std430, set = 0, binding = 4) readonly buffer Indices { uint indices[]; };
layout(std430, set = 0, binding = 5) readonly buffer HeadBase { uint head_base[]; };
// Per tile: head, first and end row in tile_rows, first and end key in tile_keys.
layout(std430, set = 0, binding = 6) readonly buffer Tiles { uint tiles[]; };
layout(std430, set = 0, binding = 7) readonly buffer TileRows { uint tile_rows[]; };
layout(std430, set = 0, binding = 8) readonly buffer TileKeys { uint tile_keys[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Out { float o[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Probs { float probs[]; };
layout(push_constant) uniform PC {
  uint lq; uint lk; uint heads; uint dh; uint dv;
  float scale;
  uint tile_count; uint want_probs;
} pc;

const uint KC = 8u, MAXD = 128u;
shared float Ks[KC * MAXD];
shared float Vs[KC * MAXD];
shared uint Js[KC];

void main() {
  const uint t = gl_WorkGroupID.y * 65535u + gl_WorkGroupID.x;
  if (t >= pc.tile_count) return;  // the whole workgroup: no barrier is left waiting
  const uint lid = gl_LocalInvocationID.x;
  const uint h = tiles[5u * t], row0 = tiles[5u * t + 1u], row1 = tiles[5u * t + 2u];
  const uint key0 = tiles[5u * t + 3u], key1 = tiles[5u * t + 4u];
  const bool has_row = lid < row1 - row0;
  const uint i = has_row ? tile_rows[row0 + lid] : 0u;
  const uint qk_stride = pc.heads * pc.dh, v_stride = pc.heads * pc.dv;
  const uint base = head_base[h];
  const uint b = base + indptr[h * (pc.lq + 1u) + i], e = base + indptr[h * (pc.lq + 1u) + i + 1u];

  float qr[MAXD];
  float acc[MAXD];
  for (uint c = 0u; c < pc.dh; ++c) qr[c] = has_row ? q[i * qk_stride + h * pc.dh + c] : 0.0;
  for (uint c = 0u; c < pc.dv; ++c) acc[c] = 0.0;
  float m = NEG_BIG, l = 0.0;
  uint next = b;  // the row's next CSR key

  for (uint c0 = key0; c0 < key1; c0 += KC) {
    const uint n = min(KC, key1 - c0);
    for (uint x = lid; x < n * pc.dh; x += 64u) {
      const uint kk = x / pc.dh, d = x % pc.dh;
      Ks[kk * MAXD + d] = k[tile_keys[c0 + kk] * qk_stride + h * pc.dh + d];
    }
    for (uint x = lid; x < n * pc.dv; x += 64u) {
      const uint kk = x / pc.dv, d = x % pc.dv;
      Vs[kk * MAXD + d] = v[tile_keys[c0 + kk] * v_stride + h * pc.dv + d];
    }
    if (lid < n) Js[lid] = tile_keys[c0 + lid];
    memoryBarrierShared();
    barrier();
    if (has_row)
      for (uint kk = 0u; kk < n; ++kk) {
        if (next >= e || indices[next] != Js[kk]) continue;
        ++next;
        float dot = 0.0;
        for (uint c = 0u; c < pc.dh; ++c) dot += qr[c] * Ks[kk * MAXD + c];
        const float s = dot * pc.scale;
        if (s > m) {
          const float rescale = exp(max(m - s, -87.0));
          l *= rescale;
          for (uint c = 0u; c < pc.dv; ++c) acc[c] *= rescale;
          m = s;
        }
        const float p = exp(max(s - m, -87.0));
        l += p;
        for (uint c = 0u; c < pc.dv; ++c) acc[c] += p * Vs[kk * MAXD + c];
      }
    barrier();
  }
  if (has_row) {
    const float inv = l > 0.0 ? 1.0 / l : 0.0;  // a row without keys: zero output
    for (uint c = 0u; c < pc.dv; ++c) o[i * v_stride + h * pc.dv + c] = acc[c] * inv;
  }
  if (pc.want_probs == 0u) return;

  next = b;
  for (uint c0 = key0; c0 < key1; c0 += KC) {
    const uint n = min(KC, key1 - c0);
    for (uint x = lid; x < n * pc.dh; x += 64u) {
      const uint kk = x / pc.dh, d = x % pc.dh;
      Ks[kk * MAXD + d] = k[tile_keys[c0 + kk] * qk_stride + h * pc.dh + d];
    }
    if (lid < n) Js[lid] = tile_keys[c0 + lid];
    memoryBarrierShared();
    barrier();
    if (has_row)
      for (uint kk = 0u; kk < n; ++kk) {
        if (next >= e || indices[next] != Js[kk]) continue;
        float dot = 0.0;
        for (uint c = 0u; c < pc.dh; ++c) dot += qr[c] * Ks[kk * MAXD + c];
        probs[next] = exp(max(dot * pc.scale - m, -87.0)) / l;
        ++next;
      }
    barrier();
  }
}
