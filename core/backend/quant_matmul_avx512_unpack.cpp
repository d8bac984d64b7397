// AVX-512 unpacking of weight blocks into the vpdpbusd panel (IntPanel in
// quant_matmul_internal.h): each column's 32 values of a block are decoded into one 256-bit
// vector of bytes u (nibbles split by shift and mask, fifth and sixth bits spread from a bit mask),
// then 16 columns x 8 dwords are transposed to 8 vectors of one dword per column with three
// rounds of two-source permutes. The same values as the portable readers in quant_matmul.cpp,
// produced ~10x faster. Float weights are converted and transposed 16 x 16 in registers.
// Products of a few rows (a keystroke, up to 4 rows of a block type, 8 of a float type) skip the
// panel (avx512_small_product): each weight row is read whole where it lies, blocks dotted
// against the activations (per-block sums folded, then transposed to a lane per column), and
// each element then gets the panel kernels' float operations in the same order, so the results
// are bit-identical to the panel path's.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "core/backend/quant_matmul_internal.h"
#include "core/formats/ggml_types.h"

#define ATLAS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))
// Register shuffles over arrays of vectors: only fast fully unrolled and inlined (the arrays
// then live in registers), which GCC does not do by itself past 8 iterations.
#define ATLAS_AVX512_FLAT \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c"), always_inline))

namespace atlas::quant_matmul {

namespace {

ATLAS_AVX512 inline float half_at_512u(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);  // the engine reads little-endian files on little-endian hosts only
  return _cvtsh_ss(h);    // exact, as half_to_float
}

ATLAS_AVX512 inline __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

ATLAS_AVX512 inline __m256i nibbles(const uint8_t* qs16) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs16));
  const __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

// Byte e of the result has bit 4 set where bit e of `bits` is.
ATLAS_AVX512 inline __m256i fifth_bits(uint32_t bits) {
  return _mm256_maskz_mov_epi8(__mmask32(bits), _mm256_set1_epi8(16));
}

struct Q8_0 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = true, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at_512u(b);
    c[0] = 0.0f;
    return u(b, 0);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int) {
    return _mm256_xor_si256(load32(b + 2), _mm256_set1_epi8(char(0x80)));
  }
};

struct Q4_0 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at_512u(b);
    c[0] = 0.0f;
    return u(b, 0);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int) { return nibbles(b + 2); }
};

struct Q4_1 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at_512u(b);
    c[0] = half_at_512u(b + 2);
    return u(b, 0);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int) { return nibbles(b + 4); }
};

struct Q5_0 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at_512u(b);
    c[0] = 0.0f;
    return u(b, 0);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int) {
    uint32_t h;
    std::memcpy(&h, b + 2, 4);
    return _mm256_or_si256(nibbles(b + 6), fifth_bits(h));
  }
};

struct Q5_1 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at_512u(b);
    c[0] = half_at_512u(b + 2);
    return u(b, 0);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int) {
    uint32_t h;
    std::memcpy(&h, b + 4, 4);
    return _mm256_or_si256(nibbles(b + 8), fifth_bits(h));
  }
};

ATLAS_AVX512 inline __m256i k_nibbles(const uint8_t* qs, int sub) {
  const __m256i q = load32(qs + 32 * (sub / 2));
  return _mm256_and_si256(_mm256_srli_epi16(q, 4 * (sub % 2)), _mm256_set1_epi8(15));
}

struct Q4_K {
  static constexpr int kSub = 8, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int sub, float* s, float* c) {
    int scale, min;
    k_scale_min(b + 4, sub, scale, min);
    s[0] = half_at_512u(b) * float(scale);
    c[0] = -(half_at_512u(b + 2) * float(min));
    return u(b, sub);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int sub) { return k_nibbles(b + 16, sub); }
};

struct Q5_K {
  static constexpr int kSub = 8, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int sub, float* s, float* c) {
    int scale, min;
    k_scale_min(b + 4, sub, scale, min);
    s[0] = half_at_512u(b) * float(scale);
    c[0] = -(half_at_512u(b + 2) * float(min));
    return u(b, sub);
  }
  ATLAS_AVX512 static __m256i u(const uint8_t* b, int sub) {
    const __mmask32 high = _mm256_test_epi8_mask(load32(b + 16), _mm256_set1_epi8(char(1 << sub)));
    return _mm256_or_si256(k_nibbles(b + 48, sub), _mm256_maskz_mov_epi8(high, _mm256_set1_epi8(16)));
  }
};

struct Q6_K {
  static constexpr int kSub = 8, kHalves = 2;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int sub, float* s, float* c) {
    const int h = sub / 4, g = sub % 4;
    const float d = half_at_512u(b + 208);
    for (int half = 0; half < 2; ++half) {
      s[half] = d * float(int8_t(b[192 + 8 * h + 2 * g + half]));
      c[half] = 0.0f;
    }
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(load32(b + 64 * h + 32 * (g % 2)), 4 * (g / 2)),
                                        _mm256_set1_epi8(15));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(load32(b + 128 + 32 * h), 2 * g), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  }
};

// One round of the transpose: swaps bit `bit` of the register index with the same bit of the
// dword lane index, for the 8 registers r[0..7].
template <int kBit>
struct SwapIndices {
  alignas(64) int32_t lo[16], hi[16];
  constexpr SwapIndices() : lo(), hi() {
    for (int l = 0; l < 16; ++l) {
      const bool set = l & (1 << kBit);
      lo[l] = set ? 16 + (l ^ (1 << kBit)) : l;
      hi[l] = set ? 16 + l : (l | (1 << kBit));
    }
  }
};

template <int kBit, int kRegs = 8>
ATLAS_AVX512_FLAT inline void swap_round(__m512i* r) {
  static constexpr SwapIndices<kBit> kIdx;
  const __m512i ilo = _mm512_load_si512(kIdx.lo), ihi = _mm512_load_si512(kIdx.hi);
#pragma GCC unroll 16
  for (int a = 0; a < kRegs; ++a) {
    if (a & (1 << kBit)) continue;
    const int b = a | (1 << kBit);
    const __m512i x = _mm512_permutex2var_epi32(r[a], ilo, r[b]);
    const __m512i y = _mm512_permutex2var_epi32(r[a], ihi, r[b]);
    r[a] = x;
    r[b] = y;
  }
}

// u[c] holds column c's 8 dwords; out + 128 j receives dword j of the 16 columns.
// Register p starts as [column p, column p + 8]: register bits (c3 c2 c1), lane bits (c0' j2 j1 j0)
// with c0' selecting p or p + 8; after the rounds the lane is column p + 8 c0', as stored.
ATLAS_AVX512_FLAT inline void transpose16x8(const __m256i* u, __m512i* r) {
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) r[p] = _mm512_inserti64x4(_mm512_castsi256_si512(u[p]), u[p + 8], 1);
  swap_round<2>(r);
  swap_round<1>(r);
  swap_round<0>(r);
}

ATLAS_AVX512 inline void transpose_store(const __m256i* u, uint8_t* out) {
  __m512i r[8];
  transpose16x8(u, r);
  for (int j = 0; j < 8; ++j) _mm512_storeu_si512(out + j * kPanelCols * 4, r[j]);
}


template <class T>
ATLAS_AVX512 void unpack(const PackedMatrix& w, int64_t col0, int cols, int64_t b0, int kb, IntPanel& p) {
  const int64_t block_bytes = ggml_type_info(w.type).block_bytes;
  p.halves = T::kHalves;
  p.wide = T::kWide;
  p.has_min = T::kMin;
  for (int g = 0; g < kPanelCols / 16; ++g) {
    for (int bb = 0; bb < kb; ++bb) {
      const int64_t b = b0 + bb;
      __m256i u[16];
      float s[16][2], c[16][2];
      for (int l = 0; l < 16; ++l) {
        const int col = 16 * g + l;
        if (col < cols) {
          u[l] = T::read(w.row(col0 + col) + (b / T::kSub) * block_bytes, int(b % T::kSub), s[l], c[l]);
        } else {
          u[l] = _mm256_setzero_si256();
          s[l][0] = s[l][1] = c[l][0] = c[l][1] = 0.0f;
        }
      }
      transpose_store(u, p.u + bb * 8 * kPanelCols * 4 + 64 * g);
      for (int h = 0; h < T::kHalves; ++h) {
        for (int l = 0; l < 16; ++l) {
          p.s[(bb * T::kHalves + h) * kPanelCols + 16 * g + l] = s[l][h];
          p.c[(bb * T::kHalves + h) * kPanelCols + 16 * g + l] = c[l][h];
        }
      }
    }
  }
}


// ---- Float weights: each of 16 rows read a run of 256 values at a time, converted (vcvtph2ps;
// bfloat16 is the high half of a float32) into a small buffer, then transposed 16 x 16 in
// registers. Runs of 0.5 to 1 KB are too short for the hardware prefetchers (each run paid a
// memory latency: 6 GB/s measured), so the next run of the same row is prefetched while this one
// is read.
constexpr int kRun512u = 256;  // values per row and run

// buf[l ld + kk] = W[col0 + l, k0 + kk] as float for l < cols, kk < kc (kc <= ld, both
// multiples of 16 or kc the rest of the depth); zero for l >= cols.
template <int kType>
ATLAS_AVX512 void load_rows_512u(const PackedMatrix& w, int64_t col0, int cols, int64_t k0, int kc,
                                 float* buf, int ld) {
  constexpr int64_t kBytes = kType == kF32 ? 4 : 2;
  for (int l = 0; l < 16; ++l) {
    const uint8_t* src = l < cols ? w.row(col0 + l) + k0 * kBytes : nullptr;
    for (int kk = 0; kk < kc; kk += 16) {
      const int left = kc - kk;
      const __mmask16 km = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      __m512 v;
      if (!src) {
        v = _mm512_setzero_ps();
      } else if constexpr (kType == kF32) {
        v = _mm512_maskz_loadu_ps(km, src + kk * kBytes);
      } else if constexpr (kType == kF16) {
        v = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(km, src + kk * kBytes));
      } else {
        v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(km, src + kk * kBytes)), 16));
      }
      _mm512_storeu_ps(buf + l * ld + kk, v);
      if (src) _mm_prefetch(reinterpret_cast<const char*>(src + (kk + ld) * kBytes), _MM_HINT_T0);
    }
  }
}

// v[t] = buf[0..15][kk + t]: 16 columns of one depth per register. Half the shuffles stay
// within 128-bit lanes (unpack, shufps), half move whole lanes (shuf_f32x4): measured faster
// than transpose16x16's cross-lane vpermt2d.
ATLAS_AVX512_FLAT inline void transposed_512u(const float* buf, int ld, int kk, __m512i* v) {
  __m512 t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    const __m512 a = _mm512_loadu_ps(buf + i * ld + kk), b = _mm512_loadu_ps(buf + (i + 1) * ld + kk);
    t[i] = _mm512_unpacklo_ps(a, b);
    t[i + 1] = _mm512_unpackhi_ps(a, b);
  }
  // u[4 g + c], 128-bit lane L: rows 4 g .. 4 g + 3 at depth 4 L + c.
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 va = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), vb = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 wa = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88), wb = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    v[c] = _mm512_castps_si512(_mm512_shuffle_f32x4(va, wa, 0x88));
    v[c + 8] = _mm512_castps_si512(_mm512_shuffle_f32x4(va, wa, 0xDD));
    v[c + 4] = _mm512_castps_si512(_mm512_shuffle_f32x4(vb, wb, 0x88));
    v[c + 12] = _mm512_castps_si512(_mm512_shuffle_f32x4(vb, wb, 0xDD));
  }
}

template <int kType>
ATLAS_AVX512 void unpack_floats_512u(const PackedMatrix& w, int64_t col0, int cols, int64_t k0, int kc,
                                     FloatPanel& p) {
  static_assert(kFloatChunk <= kRun512u);
  alignas(64) float buf[16][kRun512u];
  for (int g = 0; g < kPanelCols / 16; ++g) {
    load_rows_512u<kType>(w, col0 + 16 * g, cols - 16 * g, k0, kc, buf[0], kRun512u);
    for (int kk = 0; kk < kc; kk += 16) {
      __m512i v[16];
      transposed_512u(buf[0], kRun512u, kk, v);
      for (int t = 0; t < 16 && kk + t < kc; ++t) _mm512_storeu_si512(p.w + (kk + t) * kPanelCols + 16 * g, v[t]);
    }
  }
}

// Float weights for a few rows without a panel: 16 columns at a time over the whole depth, each
// 16 x 16 piece consumed as soon as it is transposed; per element the same fma chain in
// increasing k as the panel kernels (which chain through y between chunks).
// The run here is up to 4096 values: 16 consecutive rows read whole are one sequential stream
// (the prefetchers' best case; runs of 256 measured 1.6x slower at one row), held in L2.
constexpr int kSmallRun512u = 4096;

template <int kType, int R>
ATLAS_AVX512 void small_float_rows_512u(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t row0,
                                        int64_t c0, int64_t n, float* y, int64_t ldy, float* buf) {
  const int run = int(x.k < kSmallRun512u ? (x.k + 15) / 16 * 16 : kSmallRun512u);
  for (int64_t g0 = 0; g0 < n; g0 += 16) {
    const int cols = int(n - g0 < 16 ? n - g0 : 16);
    const __mmask16 valid = cols == 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < x.k; k0 += run) {
      const int kc = int(x.k - k0 < run ? x.k - k0 : run);
      load_rows_512u<kType>(w, c0 + g0, cols, k0, kc, buf, run);
      for (int kk = 0; kk < kc; kk += 16) {
        __m512i v[16];
        transposed_512u(buf, run, kk, v);
        const int steps = kc - kk < 16 ? kc - kk : 16;
#pragma GCC unroll 16
        for (int t = 0; t < steps; ++t)
#pragma GCC unroll 4
          for (int r = 0; r < R; ++r)
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(x.xf[size_t((row0 + r) * x.k + k0 + kk + t)]),
                                     _mm512_castsi512_ps(v[t]), acc[r]);
      }
    }
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (row0 + r) * ldy + g0, valid, acc[r]);
  }
}

template <int kType>
ATLAS_AVX512 void small_float_product_512u(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t c0,
                                           int64_t n, float* y, int64_t ldy) {
  std::vector<float> buf(size_t(16) * kSmallRun512u);
  int64_t i = 0;
  for (; i + 4 <= x.m; i += 4) small_float_rows_512u<kType, 4>(w, x, i, c0, n, y, ldy, buf.data());
  for (; i < x.m; ++i) small_float_rows_512u<kType, 1>(w, x, i, c0, n, y, ldy, buf.data());
}

// ---- Small-m product of the block types: per 16 weight columns and 8 blocks (a K-quant's
// super-block), each column's blocks are dotted where they lie (two blocks per vpdpbusd against
// the activations' 64 bytes), the partial sums folded to one per block and transposed so that
// lanes are columns; the scales of the 16 columns are gathered. Then, per block in increasing
// order, exactly the panel kernel's float operations, so the results are bit-identical.

// Scales and minimums (s, c of IntPanel) of blocks [8 t, 8 t + 8) for 16 columns: `at` points
// at the group's first block in the first column, `offs` holds each column's byte offset.
template <class T>
ATLAS_AVX512 inline void plain_scales_512u(const uint8_t* at, __m512i offs, __mmask16 valid,
                                           int64_t block_bytes, __m512* s, __m512* c) {
  for (int b = 0; b < 8; ++b) {
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), valid, offs, at + b * block_bytes, 1);
    s[b] = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
    c[b] = T::kMin ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16))) : _mm512_setzero_ps();
  }
}

// Q4_K / Q5_K: d and dmin at byte 0, the 12 bytes of 6-bit scales and minimums at byte 4 (the
// vector form of k_scale_min).
ATLAS_AVX512 inline void k_scales_512u(const uint8_t* at, __m512i offs, __mmask16 valid, __m512* s,
                                       __m512* c) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i v = _mm512_mask_i32gather_epi32(zero, valid, offs, at, 1);
  const __m512i p0 = _mm512_mask_i32gather_epi32(zero, valid, offs, at + 4, 1);
  const __m512i p1 = _mm512_mask_i32gather_epi32(zero, valid, offs, at + 8, 1);
  const __m512i p2 = _mm512_mask_i32gather_epi32(zero, valid, offs, at + 12, 1);
  const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
  const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
  const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15), m3 = _mm512_set1_epi32(3);
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (int j = 0; j < 8; ++j) {
    __m512i sc, mn;
    if (j < 4) {
      sc = _mm512_and_si512(_mm512_srli_epi32(p0, unsigned(8 * j)), m63);
      mn = _mm512_and_si512(_mm512_srli_epi32(p1, unsigned(8 * j)), m63);
    } else {
      const unsigned sh = unsigned(8 * (j - 4));
      sc = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(p2, sh), m15),
                           _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(p0, sh + 6), m3), 4));
      mn = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(p2, sh + 4), m15),
                           _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(p1, sh + 6), m3), 4));
    }
    s[j] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
    c[j] = _mm512_xor_ps(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mn)), sign);
  }
}

// d[j] holds the vpdpbusd partial sums of blocks 2 j (low half) and 2 j + 1: the 8 blocks' sums.
ATLAS_AVX512_FLAT inline __m256i block_sums_512u(const __m512i* d) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i e01 = _mm512_add_epi32(_mm512_permutex2var_epi32(d[0], even, d[1]),
                                       _mm512_permutex2var_epi32(d[0], odd, d[1]));
  const __m512i e23 = _mm512_add_epi32(_mm512_permutex2var_epi32(d[2], even, d[3]),
                                       _mm512_permutex2var_epi32(d[2], odd, d[3]));
  const __m512i f = _mm512_add_epi32(_mm512_permutex2var_epi32(e01, even, e23),
                                     _mm512_permutex2var_epi32(e01, odd, e23));
  return _mm512_cvtepi64_epi32(_mm512_add_epi32(f, _mm512_shuffle_epi32(f, _MM_PERM_CDAB)));
}

// sums: R x groups x 16 x 8 int32 of scratch. Each of the 16 columns is read whole before the
// next (16 consecutive rows of W are one sequential stream, the prefetchers' best case), its
// per-block sums kept; then per group of 8 blocks the sums are transposed and the float
// epilogue runs.
template <class T, int R>
ATLAS_AVX512 void small_rows_512u(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t row0,
                                  int64_t c0, int64_t n, float* y, int64_t ldy, __m256i* sums) {
  const int64_t block_bytes = ggml_type_info(w.type).block_bytes;
  const int64_t nb = x.k / 32, groups = nb / 8;
  const int64_t group_bytes = 8 / T::kSub * block_bytes;
  const __m512i offs = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(int32_t(w.row_bytes)));
  auto at = [&](int r, int64_t t, int l) -> __m256i& { return sums[(r * groups + t) * 16 + l]; };
  for (int64_t g0 = 0; g0 < n; g0 += 16) {
    const int cols = int(n - g0 < 16 ? n - g0 : 16);
    const __mmask16 valid = cols == 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
    const uint8_t* base = w.row(c0 + g0);
    for (int l = 0; l < 16; ++l) {
      if (l >= cols) {
        for (int r = 0; r < R; ++r)
          for (int64_t t = 0; t < groups; ++t) at(r, t, l) = _mm256_setzero_si256();
        continue;
      }
      for (int64_t t = 0; t < groups; ++t) {
        const uint8_t* g = base + l * w.row_bytes + t * group_bytes;
        __m512i u[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
          u[j] = _mm512_inserti64x4(
              _mm512_castsi256_si512(T::u(g + (2 * j / T::kSub) * block_bytes, (2 * j) % T::kSub)),
              T::u(g + ((2 * j + 1) / T::kSub) * block_bytes, (2 * j + 1) % T::kSub), 1);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          const int8_t* q = x.q.data() + (row0 + r) * x.k + t * 256;
          __m512i d[4];
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j)
            d[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[j], _mm512_loadu_si512(q + 64 * j));
          at(r, t, l) = block_sums_512u(d);
        }
      }
    }
    __m512 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t t = 0; t < groups; ++t) {
      __m512 s[8], c[8];
      if constexpr (T::kSub == 8)
        k_scales_512u(base + t * group_bytes, offs, valid, s, c);
      else
        plain_scales_512u<T>(base + t * group_bytes, offs, valid, block_bytes, s, c);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        __m512i dots[8];
        transpose16x8(&at(r, t, 0), dots);
#pragma GCC unroll 8
        for (int b = 0; b < 8; ++b) {
          const size_t blk = size_t((row0 + r) * nb + t * 8 + b);
          const __m512i dot = _mm512_add_epi32(_mm512_set1_epi32(x.bias[blk]), dots[b]);
          acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(s[b], _mm512_set1_ps(x.d[blk])), acc[r]);
          if constexpr (T::kMin) acc[r] = _mm512_fmadd_ps(c[b], _mm512_set1_ps(x.dsum32[blk]), acc[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(y + (row0 + r) * ldy + g0, valid, acc[r]);
  }
}

template <class T>
ATLAS_AVX512 void small_product_512u(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t c0,
                                     int64_t n, float* y, int64_t ldy) {
  struct alignas(32) Sums8 {
    int32_t v[8];
  };
  std::vector<Sums8> buf(size_t(2 * (x.k / 256) * 16));
  __m256i* sums = reinterpret_cast<__m256i*>(buf.data());  // __m256i may alias anything
  int64_t i = 0;
  for (; i + 2 <= x.m; i += 2) small_rows_512u<T, 2>(w, x, i, c0, n, y, ldy, sums);
  if (i < x.m) small_rows_512u<T, 1>(w, x, i, c0, n, y, ldy, sums);
}

}  // namespace

IntUnpacker avx512_int_unpacker(uint32_t type) {
  switch (type) {
    case kQ8_0: return unpack<Q8_0>;
    case kQ4_0: return unpack<Q4_0>;
    case kQ4_1: return unpack<Q4_1>;
    case kQ5_0: return unpack<Q5_0>;
    case kQ5_1: return unpack<Q5_1>;
    case kQ4_K: return unpack<Q4_K>;
    case kQ5_K: return unpack<Q5_K>;
    case kQ6_K: return unpack<Q6_K>;
    default: return nullptr;
  }
}

}  // namespace atlas::quant_matmul

namespace atlas::quant_matmul {

FloatUnpacker avx512_float_unpacker(uint32_t type) {
  switch (type) {
    case kF32: return unpack_floats_512u<kF32>;
    case kF16: return unpack_floats_512u<kF16>;
    case kBF16: return unpack_floats_512u<kBF16>;
    default: return nullptr;
  }
}

// Rows up to which the small-m product runs (measured: bench_quant_matmul).
constexpr int64_t kSmallRows512 = 4, kSmallFloatRows512 = 8;

bool avx512_small_product(const PackedMatrix& w, const PreparedInput::Impl& x, int64_t c0, int64_t n,
                          float* y, int64_t ldy) {
  switch (w.type) {
    case kF32: if (x.m > kSmallFloatRows512) return false; small_float_product_512u<kF32>(w, x, c0, n, y, ldy); return true;
    case kF16: if (x.m > kSmallFloatRows512) return false; small_float_product_512u<kF16>(w, x, c0, n, y, ldy); return true;
    case kBF16: if (x.m > kSmallFloatRows512) return false; small_float_product_512u<kBF16>(w, x, c0, n, y, ldy); return true;
    default: break;
  }
  if (x.m > kSmallRows512 || x.k % 256 != 0 || w.row_bytes > (int64_t(1) << 26)) return false;
  switch (w.type) {
    case kQ8_0: small_product_512u<Q8_0>(w, x, c0, n, y, ldy); return true;
    case kQ4_0: small_product_512u<Q4_0>(w, x, c0, n, y, ldy); return true;
    case kQ4_1: small_product_512u<Q4_1>(w, x, c0, n, y, ldy); return true;
    case kQ5_0: small_product_512u<Q5_0>(w, x, c0, n, y, ldy); return true;
    case kQ5_1: small_product_512u<Q5_1>(w, x, c0, n, y, ldy); return true;
    case kQ4_K: small_product_512u<Q4_K>(w, x, c0, n, y, ldy); return true;
    case kQ5_K: small_product_512u<Q5_K>(w, x, c0, n, y, ldy); return true;
    default: return false;
  }
}

}  // namespace atlas::quant_matmul
