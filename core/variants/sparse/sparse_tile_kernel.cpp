// Sixteen rows against blocks of sixteen keys (sparse_tile_kernel.h), written with GCC's generic
// vectors so the same source compiles to one AVX-512 register per vector with -march=native
// and to narrower registers elsewhere.
#include "core/variants/sparse/sparse_tile_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/tensor/vec16.h"

// Without AVX-512 (the portable preset) the 64-byte vectors are passed between this file's own
// functions in pieces; the compilers warn that the ABI differs, which no caller outside sees.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace atlas::tile_kernel {

namespace {

using vec16::Vec;
using vec16::load;
using vec16::store;
typedef int32_t Bits __attribute__((vector_size(64)));

// Heads this wide keep their keys as rows (block_scores_rows); others are transposed.
constexpr int kRowMajorWidth = 64;

constexpr Bits kLaneBit = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};

// Lanes of the rows that see a column: all ones where bit r of `rows` is set.
inline Bits lanes_of(uint16_t rows) { return (kLaneBit & int32_t(rows)) != 0; }

// dst[d][r] = rows[r][d] for d < width (a multiple of 16 read as vectors, the rest one by one),
// r < n; lanes of absent rows are 0. dst has room for `width` vectors of 16.
void transpose_rows(const float* const* rows, int n, int64_t width, float* dst) {
  int64_t d0 = 0;
  for (; d0 + kLanes <= width; d0 += kLanes) {
    Vec m[kLanes];
    vec16::load_transposed(rows, n, d0, m);
    for (int i = 0; i < kLanes; ++i) store(dst + (d0 + i) * kLanes, m[i]);
  }
  for (int64_t d = d0; d < width; ++d)
    for (int r = 0; r < kLanes; ++r) dst[d * kLanes + r] = r < n ? rows[r][d] : 0.0f;
}

// Stores a block's scores as scale S where the row sees the column and -inf elsewhere, and takes
// the rows' running maxima in mx.
inline void store_scores(const Vec* acc, const uint16_t* column_rows, float scale, float* out, Vec& mx) {
  const Vec minus_inf = Vec{} - INFINITY;
#pragma GCC unroll 16
  for (int j = 0; j < kLanes; ++j) {
    const Vec s = lanes_of(column_rows[j]) ? acc[j] * scale : minus_inf;
    mx = s > mx ? s : mx;
    store(out + j * kLanes, s);
  }
}

// S for one key block, acc[j] (lanes = rows) = sum_d qt[d] * kt[d][j], stored as scale S where
// the row sees the column and -inf elsewhere; the rows' running maxima in mx.
void block_scores(const float* qt, const float* kt, int64_t dk, const uint16_t* column_rows, float scale,
                  float* out, Vec& mx) {
  Vec acc[kLanes] = {};
  for (int64_t d = 0; d < dk; ++d) {
    const Vec q = load(qt + d * kLanes);
    const float* kd = kt + d * kLanes;
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) acc[j] += q * kd[j];
  }
  store_scores(acc, column_rows, scale, out, mx);
}

// The same with the block's keys as rows of DK floats (kb[j][d]), for the head width most
// models have: the keys are then copied rather than transposed when packed, and key j's
// element d is at a fixed offset the compiler folds into the broadcast.
template <int DK>
void block_scores_rows(const float* qt, const float* kb, const uint16_t* column_rows, float scale, float* out,
                       Vec& mx) {
  Vec acc[kLanes] = {};
  for (int d = 0; d < DK; ++d) {
    const Vec q = load(qt + d * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < kLanes; ++j) acc[j] += q * kb[j * DK + d];
  }
  store_scores(acc, column_rows, scale, out, mx);
}

// exp(x) lane-wise for x <= 0 (Cephes' expf: x = n ln 2 + r, |r| <= ln 2 / 2, a degree-6
// polynomial in r, times 2^n; relative error ~1e-7). Below -87.3 (-inf included) it gives
// ~1e-38, not 0: callers zero the lanes they mask.
inline Vec exp_nonpositive(Vec x) {
  x = x < -87.3f ? Vec{} - 87.3f : x;
  const Vec round = Vec{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const Vec n = (x * 1.44269504f + round) - round;
  const Vec r = x - n * 0.693359375f - n * -2.12194440e-4f;
  Vec p = Vec{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const Bits two_to_n = (__builtin_convertvector(n, Bits) + 127) << 23;
  Vec scale;
  std::memcpy(&scale, &two_to_n, sizeof scale);
  return p * scale;
}

// exp(s - max) over the used blocks, lane-wise: columns a row does not see become exactly 0.
// Returns the rows' 1 / sum (0 for a row that sees nothing).
Vec exponentials(float* p, const std::vector<int32_t>& blocks, const uint16_t* column_rows, Vec mx) {
  mx = mx == Vec{} - INFINITY ? Vec{} : mx;
  Vec sum = {};
  for (const int32_t b : blocks)
    for (int64_t c = int64_t(b) * kLanes; c < (int64_t(b) + 1) * kLanes; ++c) {
      const Vec e = lanes_of(column_rows[c]) ? exp_nonpositive(load(p + c * kLanes) - mx) : Vec{};
      sum += e;
      store(p + c * kLanes, e);
    }
  return sum > 0 ? 1.0f / sum : Vec{};
}

}  // namespace

void pack_keys(const float* k, int64_t k_stride, const float* v, int64_t v_stride, const int32_t* keys,
               int64_t n, int64_t dk, int64_t dv, PackedKeys& out) {
  out.keys = n;
  out.blocks = (n + kLanes - 1) / kLanes;
  out.dk = dk;
  out.dv = dv;
  out.value_stride = (dv + kLanes - 1) / kLanes * kLanes;
  out.kt.resize(size_t(out.blocks * dk * kLanes));
  out.v.resize(size_t(out.blocks * kLanes * out.value_stride));
  const float* rows[kLanes];
  const auto prefetch_rows = [&](const float* base, int64_t stride, int64_t width, int64_t b) {
    for (int64_t c = b * kLanes; c < std::min(n, (b + 1) * kLanes); ++c)
      for (int64_t d = 0; d < width; d += kLanes) __builtin_prefetch(base + int64_t(keys[c]) * stride + d, 0, 3);
  };
  prefetch_rows(k, k_stride, dk, 0);
  for (int64_t b = 0; b < out.blocks; ++b) {
    // The next block's keys are fetched while this one is transposed (rows far apart in memory
    // defeat the hardware's prefetcher).
    prefetch_rows(k, k_stride, dk, b + 1);
    prefetch_rows(v, v_stride, dv, b);
    const int m = int(std::min<int64_t>(kLanes, n - b * kLanes));
    for (int j = 0; j < m; ++j) rows[j] = k + int64_t(keys[b * kLanes + j]) * k_stride;
    float* block = out.kt.data() + b * dk * kLanes;
    if (dk == kRowMajorWidth) {
      for (int j = 0; j < kLanes; ++j)
        for (int64_t d = 0; d < dk; d += kLanes) store(block + j * dk + d, j < m ? load(rows[j] + d) : Vec{});
    } else {
      transpose_rows(rows, m, dk, block);
    }
  }
  for (int64_t c = 0; c < out.blocks * kLanes; ++c) {
    float* dst = out.v.data() + c * out.value_stride;
    const float* src = c < n ? v + int64_t(keys[c]) * v_stride : nullptr;
    int64_t d = 0;
    if (src)
      for (; d + kLanes <= dv; d += kLanes) store(dst + d, load(src + d));
    for (; d < out.value_stride; ++d) dst[d] = src && d < dv ? src[d] : 0.0f;
  }
}

void attend_tile(const PackedKeys& keys, const float* const* q_rows, int n, const uint16_t* column_rows,
                 float scale, float* const* out_rows, TileScratch& sc) {
  const int64_t dk = keys.dk, dv = keys.dv;
  sc.used_blocks.clear();
  for (int64_t b = 0; b < keys.blocks; ++b) {
    uint16_t any = 0;
    for (int j = 0; j < kLanes; ++j) any |= column_rows[b * kLanes + j];
    if (any) sc.used_blocks.push_back(int32_t(b));
  }
  if (sc.used_blocks.empty()) {
    for (int r = 0; r < n; ++r) std::fill_n(out_rows[r], dv, 0.0f);
    return;
  }
  sc.qt.resize(size_t(dk * kLanes));
  transpose_rows(q_rows, n, dk, sc.qt.data());
  if (sc.p.size() < size_t(keys.blocks * kLanes * kLanes)) sc.p.resize(size_t(keys.blocks * kLanes * kLanes));
  float* p = sc.p.data();
  Vec mx = Vec{} - INFINITY;
  for (const int32_t b : sc.used_blocks)
    if (dk == kRowMajorWidth)
      block_scores_rows<kRowMajorWidth>(sc.qt.data(), keys.kt.data() + int64_t(b) * dk * kLanes,
                                        column_rows + int64_t(b) * kLanes, scale, p + int64_t(b) * kLanes * kLanes, mx);
    else
      block_scores(sc.qt.data(), keys.kt.data() + int64_t(b) * dk * kLanes, dk, column_rows + int64_t(b) * kLanes,
                   scale, p + int64_t(b) * kLanes * kLanes, mx);
  const Vec inverse_sum = exponentials(p, sc.used_blocks, column_rows, mx);
  store(sc.inverse_sum, inverse_sum);
  // out[r, v0 .. v0 + 16) = sum_c P[r, c] v[c, v0 .. v0 + 16): the output's columns as lanes, so
  // each accumulator is a piece of one row's output, normalised once at the end.
  for (int64_t v0 = 0; v0 < dv; v0 += kLanes) {
    Vec acc[kLanes] = {};
    for (const int32_t b : sc.used_blocks)
      for (int64_t c = int64_t(b) * kLanes; c < (int64_t(b) + 1) * kLanes; ++c) {
        const Vec vc = load(keys.v.data() + c * keys.value_stride + v0);
        const float* pc = p + c * kLanes;
#pragma GCC unroll 16
        for (int r = 0; r < kLanes; ++r) acc[r] += pc[r] * vc;
      }
    const int64_t width = std::min<int64_t>(kLanes, dv - v0);
    for (int r = 0; r < n; ++r) {
      acc[r] *= sc.inverse_sum[r];
      if (width == kLanes) {
        store(out_rows[r] + v0, acc[r]);
      } else {
        for (int64_t j = 0; j < width; ++j) out_rows[r][v0 + j] = acc[r][j];
      }
    }
  }
}

}  // namespace atlas::tile_kernel
