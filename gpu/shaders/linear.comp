#version 450
// y = x w^T + b: x [M, K], w [N, K] (PyTorch layout, so both operands are read along K),
// b [N]. Each workgroup computes a 64 x 64 tile of y in K steps of 16 staged through shared
// memory; each of its 128 invocations owns 8 x 4 outputs, at rows ty + 8i and columns
// tx + 16j so neighbouring invocations read neighbouring shared words.
// 128 invocations and 8 KiB of shared memory fit every Vulkan device's minimum limits.
layout(local_size_x = 16, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform PC {
  uint row0; uint rows; uint n; uint k; uint x_base; uint y_base; uint has_bias;
} pc;

const uint BM = 64u, BN = 64u, BK = 16u;
shared float As[BK * BM];  // As[kk * BM + m]: K-major so the inner loop reads rows apart
shared float Bs[BK * BN];  // Bs[kk * BN + n]

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16u + tx;
  const uint m0 = gl_WorkGroupID.y * BM;  // relative to row0
  const uint n0 = gl_WorkGroupID.x * BN;

  float acc[8][4];
  for (uint i = 0u; i < 8u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
    // 1024 elements of each tile, 8 per invocation; consecutive invocations read
    // consecutive k of one row, zero outside the matrices.
    for (uint p = 0u; p < 8u; ++p) {
      const uint e = tid + 128u * p;
      const uint r = e / BK, c = e % BK;
      const uint gk = k0 + c;
      const uint gm = m0 + r, gn = n0 + r;
      As[c * BM + r] = (gm < pc.rows && gk < pc.k) ? x[(pc.row0 + gm) * pc.k + gk - pc.x_base] : 0.0;
      Bs[c * BN + r] = (gn < pc.n && gk < pc.k) ? w[gn * pc.k + gk] : 0.0;
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
      if (gn >= pc.n) continue;
      y[(pc.row0 + gm) * pc.n + gn - pc.y_base] = acc[i][j] + (pc.has_bias != 0u ? bias[gn] : 0.0);
    }
  }
}
