#pragma once
// Sixteen floats as one GCC/Clang generic vector: one AVX-512 register with -march=native,
// narrower registers elsewhere (the same source builds for every preset and under Clang's
// sanitizers). Shared by the kernels that work on 16-lane tiles: the sparse tile kernel
// (core/variants/sparse/sparse_tile_kernel.cpp) and the packed matrix product
// (core/backend/cpu_gemm.cpp).
#include <cstdint>
#include <cstring>
#include <utility>

// Without AVX-512 the 64-byte vectors are passed between these inline functions in pieces; the
// compilers warn that the ABI differs, which no caller outside a translation unit sees.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace atlas::vec16 {

constexpr int kLanes = 16;
typedef float Vec __attribute__((vector_size(64)));

inline Vec load(const float* p) {
  Vec x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline void store(float* p, Vec x) { std::memcpy(p, &x, sizeof x); }

// Swaps the h x h blocks off the diagonal of every 2h x 2h block of rows top / bottom: h = 8, 4,
// 2, 1 in turn transposes a 16 x 16 matrix held as 16 row vectors. (__builtin_shufflevector:
// GCC 12 and Clang both have it; lane c of the result is lane `index` of top:bottom.)
template <int h, int... c>
inline void swap_blocks(Vec& top, Vec& bottom, std::integer_sequence<int, c...>) {
  const Vec t = __builtin_shufflevector(top, bottom, ((c & h) ? 16 + c - h : c)...);
  bottom = __builtin_shufflevector(top, bottom, ((c & h) ? 16 + c : c + h)...);
  top = t;
}

template <int h>
inline void swap_stage(Vec* m) {
  for (int i = 0; i < kLanes; ++i)
    if (!(i & h)) swap_blocks<h>(m[i], m[i + h], std::make_integer_sequence<int, kLanes>{});
}

// m[i][j] becomes m[j][i].
inline void transpose(Vec* m) {
  swap_stage<8>(m);
  swap_stage<4>(m);
  swap_stage<2>(m);
  swap_stage<1>(m);
}

// The 16 x 16 block at offset `at` of up to 16 rows, transposed: lane r of m[t] is rows[r][at + t]
// for r < n, 0 for the rows past n. Every row must hold at least at + 16 floats.
inline void load_transposed(const float* const* rows, int64_t n, int64_t at, Vec* m) {
  for (int64_t r = 0; r < kLanes; ++r) m[r] = r < n ? load(rows[r] + at) : Vec{};
  transpose(m);
}

}  // namespace atlas::vec16

#pragma GCC diagnostic pop
