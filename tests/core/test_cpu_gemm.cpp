// The CPU backend's packed matrix product (core/backend/cpu_gemm.h) against two oracles: a
// double-precision loop (every build), and, where the packed AVX-512 kernel runs, a scalar chain
// of std::fma in increasing k from zero, which it must equal bit for bit at every element
// whatever the shapes, strides and the element's position. Shapes cross every edge of the
// kernel's tiles (12 rows, 32 columns) and cache blocks (384 deep, 768 columns, 4092 rows).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "core/backend/cpu_gemm.h"
#include "core/tensor/random.h"

using namespace atlas;

namespace {

struct GemmCase {
  int64_t m, n, depth;
  bool a_transposed, b_transposed;  // stored as [depth, m] / [n, depth]
};

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

}  // namespace

TEST_CASE("packed product equals the fma chain and a double loop at every tile and block edge") {
  const GemmCase cases[] = {{1, 1, 1, false, false},    {11, 31, 7, false, true},
                            {12, 32, 16, false, true},  {13, 33, 17, true, false},
                            {25, 65, 64, false, true},  {37, 100, 385, false, true},
                            {50, 800, 40, true, true},  {24, 64, 769, false, false},
                            {4100, 20, 9, false, true}, {30, 45, 0, false, true}};
  for (const GemmCase& c : cases) {
    INFO("m " << c.m << " n " << c.n << " depth " << c.depth << " A^T " << c.a_transposed << " B^T " << c.b_transposed);
    const std::vector<float> a = random_floats(std::max<int64_t>(1, c.m * c.depth), 11 + c.m),
                             b = random_floats(std::max<int64_t>(1, c.depth * c.n), 23 + c.n);
    const cpu_gemm::Operand A = c.a_transposed ? cpu_gemm::Operand{a.data(), 1, c.m} : cpu_gemm::Operand{a.data(), c.depth, 1};
    const cpu_gemm::Operand B = c.b_transposed ? cpu_gemm::Operand{b.data(), 1, c.depth} : cpu_gemm::Operand{b.data(), c.n, 1};
    auto at = [&](const cpu_gemm::Operand& o, int64_t r, int64_t col) { return o.data[r * o.row_stride + col * o.col_stride]; };
    const int64_t ldc = c.n + 3;  // a wider C: the 3 columns past n must stay untouched
    std::vector<float> got(static_cast<size_t>(c.m * ldc), -7.0f);
    cpu_gemm::multiply(c.m, c.n, c.depth, A, B, got.data(), ldc);
    int64_t chain_mismatch = 0, loop_mismatch = 0, touched = 0;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        float chain = 0.0f;
        double exact = 0, magnitude = 0;
        for (int64_t k = 0; k < c.depth; ++k) {
          chain = std::fma(at(A, i, k), at(B, k, j), chain);
          exact += double(at(A, i, k)) * at(B, k, j);
          magnitude += std::fabs(double(at(A, i, k)) * at(B, k, j));
        }
        const float g = got[size_t(i * ldc + j)];
        chain_mismatch += g != chain;
        loop_mismatch += std::fabs(g - exact) > 1e-6 * magnitude + 1e-30;
      }
      for (int64_t j = c.n; j < ldc; ++j) touched += got[size_t(i * ldc + j)] != -7.0f;
    }
    CHECK(loop_mismatch == 0);
    CHECK(touched == 0);
    if (cpu_gemm::packed_kernel_available()) CHECK(chain_mismatch == 0);
  }
}

TEST_CASE("rows and tiles of a packed product computed alone equal the whole product's") {
  const int64_t m = 70, n = 90, depth = 400;
  const std::vector<float> a = random_floats(m * depth, 5), b = random_floats(n * depth, 6);
  const cpu_gemm::Operand A{a.data(), depth, 1}, B{b.data(), 1, depth};
  std::vector<float> whole(size_t(m * n));
  cpu_gemm::multiply(m, n, depth, A, B, whole.data(), n);
  // Rows [13, 30) x columns [33, 70): a tile that starts inside the kernel's row and column tiles.
  const int64_t r0 = 13, rows = 17, c0 = 33, cols = 37;
  std::vector<float> part(size_t(rows * cols));
  cpu_gemm::multiply(rows, cols, depth, {a.data() + r0 * depth, depth, 1}, {b.data() + c0 * depth, 1, depth},
                     part.data(), cols);
  int64_t differ = 0;
  double worst = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float w = whole[size_t((r0 + i) * n + c0 + j)], p = part[size_t(i * cols + j)];
      differ += w != p;
      worst = std::max(worst, double(std::fabs(w - p)));
    }
  if (cpu_gemm::packed_kernel_available())
    CHECK(differ == 0);
  else
    CHECK(worst < 1e-3);  // Eigen's product: the same sums in another order
}
