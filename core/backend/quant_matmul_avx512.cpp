// AVX-512 kernels of the quantized product (quant_matmul.cpp has the scheme): per block of 32,
//   y[i, col] += float(sum_e u[col, e] q[i, e]) (s[col] d[i]) + c[col] dsum[i]
// with the integer dot by vpdpbusd (u8 x s8 -> s32, four products per 32-bit lane), 16 weight
// columns per vector and the activations' 4 bytes broadcast from memory; and for float weights
// y[i, col] = fma chain over k of x[i, k] W[col, k]. A tile is 4 rows x 32 columns (int8: 8
// accumulators, 8 dot registers) or 8 rows x 32 columns (float: 16 accumulators). Compiled with
// target attributes, so the file builds without -march flags; quant_matmul.cpp only calls it on
// a CPU that reports avx512f/bw/vl/vnni.
#include <immintrin.h>

#include <cstring>

#include "core/backend/quant_matmul_internal.h"

#define ATLAS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace atlas::quant_matmul {

namespace {

using Impl512 = PreparedInput::Impl;

ATLAS_AVX512 inline __m512i broadcast4_512(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Rows [row0, row0 + R) of the tile; masks select the valid columns of each 16-column half.
template <int R, int H, bool kMin>
ATLAS_AVX512 void int_tile_512(const IntPanel& p, int kb, const Impl512& x, int64_t row0, int64_t b0,
                           float* y, int64_t ldy, __mmask16 m0, __mmask16 m1, bool first) {
  const int64_t nb = x.k / 32;
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) {
    float* yr = y + (row0 + r) * ldy;
    acc[r][0] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, yr);
    acc[r][1] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, yr + 16);
  }
  const int8_t* q[R];
  for (int r = 0; r < R; ++r) q[r] = x.q.data() + (row0 + r) * x.k + b0 * 32;
  for (int bb = 0; bb < kb; ++bb) {
    const uint8_t* u = p.u + bb * 8 * kPanelCols * 4;
    for (int h = 0; h < H; ++h) {
      __m512i dot[R][2];
      for (int r = 0; r < R; ++r)
        dot[r][0] = dot[r][1] = _mm512_set1_epi32(x.bias[size_t(((row0 + r) * nb + b0 + bb) * H + h)]);
      for (int j = h * 8 / H; j < (h + 1) * 8 / H; ++j) {
        const __m512i w0 = _mm512_loadu_si512(u + j * 128);
        const __m512i w1 = _mm512_loadu_si512(u + j * 128 + 64);
        for (int r = 0; r < R; ++r) {
          const __m512i a = broadcast4_512(q[r] + bb * 32 + 4 * j);
          dot[r][0] = _mm512_dpbusd_epi32(dot[r][0], w0, a);
          dot[r][1] = _mm512_dpbusd_epi32(dot[r][1], w1, a);
        }
      }
      const int at = (bb * H + h) * kPanelCols;
      const __m512 s0 = _mm512_loadu_ps(p.s + at), s1 = _mm512_loadu_ps(p.s + at + 16);
      for (int r = 0; r < R; ++r) {
        const size_t blk = size_t((row0 + r) * nb + b0 + bb);
        const __m512 d = _mm512_set1_ps(x.d[blk]);
        acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][0]), _mm512_mul_ps(s0, d), acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][1]), _mm512_mul_ps(s1, d), acc[r][1]);
        if constexpr (kMin) {  // H == 1
          const __m512 ds = _mm512_set1_ps(x.dsum32[blk]);
          acc[r][0] = _mm512_fmadd_ps(_mm512_loadu_ps(p.c + at), ds, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(_mm512_loadu_ps(p.c + at + 16), ds, acc[r][1]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    float* yr = y + (row0 + r) * ldy;
    _mm512_mask_storeu_ps(yr, m0, acc[r][0]);
    _mm512_mask_storeu_ps(yr + 16, m1, acc[r][1]);
  }
}

inline void column_masks_512(int cols, __mmask16& m0, __mmask16& m1) {
  m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  m1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
}

template <int H, bool kMin>
ATLAS_AVX512 void int_rows_512(const IntPanel& p, int kb, const Impl512& x, int64_t b0, float* y,
                           int64_t ldy, int cols, bool first) {
  __mmask16 m0, m1;
  column_masks_512(cols, m0, m1);
  int64_t i = 0;
  for (; i + 4 <= x.m; i += 4) int_tile_512<4, H, kMin>(p, kb, x, i, b0, y, ldy, m0, m1, first);
  switch (x.m - i) {
    case 3: int_tile_512<3, H, kMin>(p, kb, x, i, b0, y, ldy, m0, m1, first); break;
    case 2: int_tile_512<2, H, kMin>(p, kb, x, i, b0, y, ldy, m0, m1, first); break;
    case 1: int_tile_512<1, H, kMin>(p, kb, x, i, b0, y, ldy, m0, m1, first); break;
    default: break;
  }
}

void int_kernel_512(const IntPanel& p, int kb, const Impl512& x, int64_t b0, float* y, int64_t ldy,
                int cols, bool first) {
  if (p.halves == 2)
    int_rows_512<2, false>(p, kb, x, b0, y, ldy, cols, first);
  else if (p.has_min)
    int_rows_512<1, true>(p, kb, x, b0, y, ldy, cols, first);
  else
    int_rows_512<1, false>(p, kb, x, b0, y, ldy, cols, first);
}

template <int R>
ATLAS_AVX512 void float_tile_512(const FloatPanel& p, int kc, const Impl512& x, int64_t row0, int64_t k0,
                             float* y, int64_t ldy, __mmask16 m0, __mmask16 m1, bool first) {
  __m512 acc[R][2];
  const float* xr[R];
  for (int r = 0; r < R; ++r) {
    float* yr = y + (row0 + r) * ldy;
    acc[r][0] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m0, yr);
    acc[r][1] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m1, yr + 16);
    xr[r] = x.xf.data() + (row0 + r) * x.k + k0;
  }
  for (int kk = 0; kk < kc; ++kk) {
    const __m512 w0 = _mm512_loadu_ps(p.w + kk * kPanelCols);
    const __m512 w1 = _mm512_loadu_ps(p.w + kk * kPanelCols + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(xr[r][kk]);
      acc[r][0] = _mm512_fmadd_ps(a, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* yr = y + (row0 + r) * ldy;
    _mm512_mask_storeu_ps(yr, m0, acc[r][0]);
    _mm512_mask_storeu_ps(yr + 16, m1, acc[r][1]);
  }
}

ATLAS_AVX512 void float_kernel_512(const FloatPanel& p, int kc, const Impl512& x, int64_t k0, float* y,
                               int64_t ldy, int cols, bool first) {
  __mmask16 m0, m1;
  column_masks_512(cols, m0, m1);
  int64_t i = 0;
  for (; i + 8 <= x.m; i += 8) float_tile_512<8>(p, kc, x, i, k0, y, ldy, m0, m1, first);
  for (; i + 4 <= x.m; i += 4) float_tile_512<4>(p, kc, x, i, k0, y, ldy, m0, m1, first);
  for (; i < x.m; ++i) float_tile_512<1>(p, kc, x, i, k0, y, ldy, m0, m1, first);
}

}  // namespace

const KernelSet kAvx512Kernels = {"avx512-vnni", int_kernel_512, float_kernel_512, avx512_int_unpacker,
                                  avx512_float_unpacker, avx512_small_product};

}  // namespace atlas::quant_matmul
