// AVX2 kernels of the quantized product (quant_matmul.cpp has the scheme), for CPUs without
// AVX-512 VNNI: the same per-element sequence as the AVX-512 kernels, so the results are the
// same bit for bit. vpdpbusd is emulated by maddubs (u8 x s8 -> pairs of s16) and madd with
// ones; maddubs saturates a pair above 32767, which 4-, 5- and 6-bit weights (u <= 63) never
// reach but Q8_0's offset bytes (u <= 255) could, so for Q8_0 the signed weight w = u - 128 is
// multiplied with the sign trick (|w| x sign(q, w), pairs <= 2 128 127), which gives the
// block's bias + dot(u, q) directly. Tiles: 2 rows x 16 columns (8 accumulators and dot
// registers fit in 16 ymm), or 4 rows x 16 columns for float weights.
#include <immintrin.h>

#include <cstring>

#include "core/backend/quant_matmul_internal.h"

#define ATLAS_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace atlas::quant_matmul {

namespace {

using ImplAvx2 = PreparedInput::Impl;

ATLAS_AVX2 inline __m256i broadcast4_avx2(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <bool kWide>
ATLAS_AVX2 inline __m256i dot4_avx2(__m256i acc, __m256i u, __m256i a) {
  __m256i pairs;
  if constexpr (kWide) {
    const __m256i w = _mm256_xor_si256(u, _mm256_set1_epi8(char(0x80)));
    pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
  } else {
    pairs = _mm256_maddubs_epi16(u, a);
  }
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

ATLAS_AVX2 inline void load_cols_avx2(float* dst, const float* src, int n, bool first) {
  for (int t = 0; t < 16; ++t) dst[t] = first || t >= n ? 0.0f : src[t];
}

// Rows [row0, row0 + R), columns [16 half, 16 half + n) of the panel.
template <int R, int H, bool kWide, bool kMin>
ATLAS_AVX2 void int_tile_avx2(const IntPanel& p, int kb, const ImplAvx2& x, int64_t row0, int64_t b0,
                         float* y, int64_t ldy, int half, int n, bool first) {
  const int64_t nb = x.k / 32;
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[16];
    load_cols_avx2(t, y + (row0 + r) * ldy + 16 * half, n, first);
    acc[r][0] = _mm256_load_ps(t);
    acc[r][1] = _mm256_load_ps(t + 8);
  }
  for (int bb = 0; bb < kb; ++bb) {
    const uint8_t* u = p.u + bb * 8 * kPanelCols * 4 + 64 * half;
    for (int h = 0; h < H; ++h) {
      // Q8_0's sign trick gives the dot of w = u - 128 itself, which is what bias + dot(u) is.
      __m256i dot[R][2];
      for (int r = 0; r < R; ++r)
        dot[r][0] = dot[r][1] =
            kWide ? _mm256_setzero_si256() : _mm256_set1_epi32(x.bias[size_t(((row0 + r) * nb + b0 + bb) * H + h)]);
      for (int j = h * 8 / H; j < (h + 1) * 8 / H; ++j) {
        __m256i w0, w1;
        std::memcpy(&w0, u + j * 128, 32);
        std::memcpy(&w1, u + j * 128 + 32, 32);
        for (int r = 0; r < R; ++r) {
          const __m256i a = broadcast4_avx2(x.q.data() + (row0 + r) * x.k + (b0 + bb) * 32 + 4 * j);
          dot[r][0] = dot4_avx2<kWide>(dot[r][0], w0, a);
          dot[r][1] = dot4_avx2<kWide>(dot[r][1], w1, a);
        }
      }
      const int at = (bb * H + h) * kPanelCols + 16 * half;
      const __m256 s0 = _mm256_loadu_ps(p.s + at), s1 = _mm256_loadu_ps(p.s + at + 8);
      for (int r = 0; r < R; ++r) {
        const size_t blk = size_t((row0 + r) * nb + b0 + bb);
        const __m256 d = _mm256_set1_ps(x.d[blk]);
        acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][0]), _mm256_mul_ps(s0, d), acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][1]), _mm256_mul_ps(s1, d), acc[r][1]);
        if constexpr (kMin) {
          const __m256 ds = _mm256_set1_ps(x.dsum32[blk]);
          acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(p.c + at), ds, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(p.c + at + 8), ds, acc[r][1]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[16];
    _mm256_store_ps(t, acc[r][0]);
    _mm256_store_ps(t + 8, acc[r][1]);
    std::memcpy(y + (row0 + r) * ldy + 16 * half, t, size_t(n) * 4);
  }
}

template <int H, bool kWide, bool kMin>
ATLAS_AVX2 void int_rows_avx2(const IntPanel& p, int kb, const ImplAvx2& x, int64_t b0, float* y,
                         int64_t ldy, int cols, bool first) {
  for (int half = 0; half * 16 < cols; ++half) {
    const int n = cols - 16 * half < 16 ? cols - 16 * half : 16;
    int64_t i = 0;
    for (; i + 2 <= x.m; i += 2) int_tile_avx2<2, H, kWide, kMin>(p, kb, x, i, b0, y, ldy, half, n, first);
    if (i < x.m) int_tile_avx2<1, H, kWide, kMin>(p, kb, x, i, b0, y, ldy, half, n, first);
  }
}

void int_kernel_avx2(const IntPanel& p, int kb, const ImplAvx2& x, int64_t b0, float* y, int64_t ldy,
                int cols, bool first) {
  if (p.halves == 2)
    int_rows_avx2<2, false, false>(p, kb, x, b0, y, ldy, cols, first);
  else if (p.wide)
    int_rows_avx2<1, true, false>(p, kb, x, b0, y, ldy, cols, first);
  else if (p.has_min)
    int_rows_avx2<1, false, true>(p, kb, x, b0, y, ldy, cols, first);
  else
    int_rows_avx2<1, false, false>(p, kb, x, b0, y, ldy, cols, first);
}

template <int R>
ATLAS_AVX2 void float_tile_avx2(const FloatPanel& p, int kc, const ImplAvx2& x, int64_t row0, int64_t k0,
                           float* y, int64_t ldy, int half, int n, bool first) {
  __m256 acc[R][2];
  const float* xr[R];
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[16];
    load_cols_avx2(t, y + (row0 + r) * ldy + 16 * half, n, first);
    acc[r][0] = _mm256_load_ps(t);
    acc[r][1] = _mm256_load_ps(t + 8);
    xr[r] = x.xf.data() + (row0 + r) * x.k + k0;
  }
  for (int kk = 0; kk < kc; ++kk) {
    const __m256 w0 = _mm256_loadu_ps(p.w + kk * kPanelCols + 16 * half);
    const __m256 w1 = _mm256_loadu_ps(p.w + kk * kPanelCols + 16 * half + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_set1_ps(xr[r][kk]);
      acc[r][0] = _mm256_fmadd_ps(a, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    alignas(32) float t[16];
    _mm256_store_ps(t, acc[r][0]);
    _mm256_store_ps(t + 8, acc[r][1]);
    std::memcpy(y + (row0 + r) * ldy + 16 * half, t, size_t(n) * 4);
  }
}

void float_kernel_avx2(const FloatPanel& p, int kc, const ImplAvx2& x, int64_t k0, float* y, int64_t ldy,
                  int cols, bool first) {
  for (int half = 0; half * 16 < cols; ++half) {
    const int n = cols - 16 * half < 16 ? cols - 16 * half : 16;
    int64_t i = 0;
    for (; i + 4 <= x.m; i += 4) float_tile_avx2<4>(p, kc, x, i, k0, y, ldy, half, n, first);
    for (; i < x.m; ++i) float_tile_avx2<1>(p, kc, x, i, k0, y, ldy, half, n, first);
  }
}

IntUnpacker int_unpacker_avx2(uint32_t) { return nullptr; }
FloatUnpacker float_unpacker_avx2(uint32_t) { return nullptr; }

}  // namespace

const KernelSet kAvx2Kernels = {"avx2", int_kernel_avx2, float_kernel_avx2, int_unpacker_avx2, float_unpacker_avx2,
                                 nullptr};

}  // namespace atlas::quant_matmul
