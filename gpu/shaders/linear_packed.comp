#version 450
// y = x w^T + b with w [N, K] held in its file's encoding (a ggml block type, dequant.glsl),
// x [M, K] and b [N] float32: linear.comp's 64 x 64 tiles, the weight tile dequantized as it
// is staged into shared memory, so the product is float32 activations times the dequantized
// weights (the CPU backend's exact products). The bound weight window holds output columns
// [col0, col0 + cols); row r of it starts at byte w_byte0 + r * row_bytes.
#include "common.glsl"
layout(local_size_x = 16, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC {
  uint row0; uint rows; uint n; uint k; uint x_base; uint y_base; uint has_bias;
  uint col0; uint cols; uint type; uint row_bytes; uint w_byte0; uint block_elems;
  uint block_bytes;
} pc;
#include "dequant.glsl"

const uint BM = 64u, BN = 64u, BK = 16u;
shared float As[BK * BM];  // As[kk * BM + m]
shared float Bs[BK * BN];  // Bs[kk * BN + n]: dequantized weights

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16u + tx;
  const uint m0 = gl_WorkGroupID.y * BM;  // relative to row0
  const uint n0 = gl_WorkGroupID.x * BN;  // relative to col0

  float acc[8][4];
  for (uint i = 0u; i < 8u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    // Consecutive invocations read consecutive k of one row: the same block of the weight.
    for (uint p = 0u; p < 8u; ++p) {
      const uint e = tid + 128u * p;
      const uint r = e / BK, c = e % BK;
      const uint gk = k0 + c;
      const uint gm = m0 + r, gn = n0 + r;
      As[c * BM + r] = (gm < pc.rows && gk < pc.k) ? x[(pc.row0 + gm) * pc.k + gk - pc.x_base] : 0.0;
      float wv = 0.0;
      if (gn < pc.cols && gk < pc.k) {
        const uint blk = gk / pc.block_elems;
        wv = dequant(pc.type, pc.w_byte0 + gn * pc.row_bytes + blk * pc.block_bytes,
                     gk - blk * pc.block_elems);
      }
      Bs[c * BN + r] = wv;
    }
    barrier();
    for (uint kk = 0u; kk < BK; ++kk) {
      float a[8], b[4];
      for (uint i = 0u; i < 8u; ++i) a[i] = As[kk * BM + ty + 8u * i];
      for (uint j = 0u; j < 4u; ++j) b[j] = Bs[kk * BN + tx + 16u * j];
      for (uint i = 0u; i < 8u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
    }
    barrier();
  }

  for (uint i = 0u; i < 8u; ++i) {
    const uint gm = m0 + ty + 8u * i;
    if (gm >= pc.rows) continue;
    for (uint j = 0u; j < 4u; ++j) {
      const uint gn = n0 + tx + 16u * j;
      if (gn >= pc.cols) continue;
      const uint col = pc.col0 + gn;
      y[(pc.row0 + gm) * pc.n + col - pc.y_base] = acc[i][j] + (pc.has_bias != 0u ? bias[col] : 0.0);
    }
  }
}
