// AVX-512 unpacking of weight blocks into the vpdpbusd panel (IntPanel in
// quant_matmul_internal.h): each column's 32 values of a block are decoded into one 256-bit
// vector of bytes u (nibbles split by shift and mask, fifth and sixth bits spread from a bit mask),
// then 16 columns x 8 dwords are transposed to 8 vectors of one dword per column with three
// rounds of two-source permutes. The same values as the portable readers in quant_matmul.cpp,
// produced ~10x faster, which is what a product with a few rows (a keystroke) spends its time on.
#include <immintrin.h>

#include <cstring>

#include "core/backend/quant_matmul_internal.h"
#include "core/formats/ggml_types.h"

#define ATLAS_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace atlas::quant_matmul {

namespace {

ATLAS_AVX512 inline float half_at(const uint8_t* p) {
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
    s[0] = half_at(b);
    c[0] = 0.0f;
    return _mm256_xor_si256(load32(b + 2), _mm256_set1_epi8(char(0x80)));
  }
};

struct Q4_0 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at(b);
    c[0] = 0.0f;
    return nibbles(b + 2);
  }
};

struct Q4_1 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    s[0] = half_at(b);
    c[0] = half_at(b + 2);
    return nibbles(b + 4);
  }
};

struct Q5_0 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    uint32_t h;
    std::memcpy(&h, b + 2, 4);
    s[0] = half_at(b);
    c[0] = 0.0f;
    return _mm256_or_si256(nibbles(b + 6), fifth_bits(h));
  }
};

struct Q5_1 {
  static constexpr int kSub = 1, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int, float* s, float* c) {
    uint32_t h;
    std::memcpy(&h, b + 4, 4);
    s[0] = half_at(b);
    c[0] = half_at(b + 2);
    return _mm256_or_si256(nibbles(b + 8), fifth_bits(h));
  }
};

inline void k_scale_min(const uint8_t* p, int sub, int& scale, int& min) {
  if (sub < 4) {
    scale = p[sub] & 63;
    min = p[sub + 4] & 63;
  } else {
    scale = (p[sub + 4] & 15) | ((p[sub - 4] >> 6) << 4);
    min = (p[sub + 4] >> 4) | ((p[sub] >> 6) << 4);
  }
}

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
    s[0] = half_at(b) * float(scale);
    c[0] = -(half_at(b + 2) * float(min));
    return k_nibbles(b + 16, sub);
  }
};

struct Q5_K {
  static constexpr int kSub = 8, kHalves = 1;
  static constexpr bool kWide = false, kMin = true;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int sub, float* s, float* c) {
    int scale, min;
    k_scale_min(b + 4, sub, scale, min);
    s[0] = half_at(b) * float(scale);
    c[0] = -(half_at(b + 2) * float(min));
    const __mmask32 high = _mm256_test_epi8_mask(load32(b + 16), _mm256_set1_epi8(char(1 << sub)));
    return _mm256_or_si256(k_nibbles(b + 48, sub), _mm256_maskz_mov_epi8(high, _mm256_set1_epi8(16)));
  }
};

struct Q6_K {
  static constexpr int kSub = 8, kHalves = 2;
  static constexpr bool kWide = false, kMin = false;
  ATLAS_AVX512 static __m256i read(const uint8_t* b, int sub, float* s, float* c) {
    const int h = sub / 4, g = sub % 4;
    const float d = half_at(b + 208);
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

template <int kBit>
ATLAS_AVX512 inline void swap_round(__m512i* r) {
  static constexpr SwapIndices<kBit> kIdx;
  const __m512i ilo = _mm512_load_si512(kIdx.lo), ihi = _mm512_load_si512(kIdx.hi);
  for (int a = 0; a < 8; ++a) {
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
ATLAS_AVX512 inline void transpose_store(const __m256i* u, uint8_t* out) {
  __m512i r[8];
  for (int p = 0; p < 8; ++p) r[p] = _mm512_inserti64x4(_mm512_castsi256_si512(u[p]), u[p + 8], 1);
  swap_round<2>(r);
  swap_round<1>(r);
  swap_round<0>(r);
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
