// The CPU backend's packed matrix product (core/backend/cpu_gemm.h) against Eigen's product on
// the same operands in the same run, on GPT-2-small's shapes: one thread, GFLOP/s and the ratio.
// With --threads 2 each thread takes half of the output columns, as the backend's linear does.
//   bench_gemm [--tokens N] [--threads T]
#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench/bench_timing.h"
#include "core/backend/cpu_gemm.h"
#include "core/tensor/tensor.h"

using namespace atlas;

namespace {

struct Shape3 {
  const char* what;
  int64_t m, n, k;
  bool b_transposed;  // B read as the rows of an [n, k] array (a linear layer's weight)
};

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t tokens = 1024;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) tokens = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, std::atoi(argv[i + 1]));
  }
  Eigen::setNbThreads(1);
  const Shape3 shapes[] = {
      {"qkv projection", tokens, 2304, 768, true},  {"output projection", tokens, 768, 768, true},
      {"mlp up", tokens, 3072, 768, true},           {"mlp down", tokens, 768, 3072, true},
      {"scores q k^T (one head)", tokens, tokens, 64, true},
      {"weights x values (one head)", tokens, 64, tokens, false},
      {"logits (4096 of the vocabulary)", tokens, 4096, 768, true}};
  std::printf("kernel: %s\n", cpu_gemm::packed_kernel_available() ? "packed AVX-512" : "Eigen (no AVX-512)");
  std::printf("| product | m x n x k | Eigen GFLOP/s | packed GFLOP/s | ratio |\n| --- | --- | --- | --- | --- |\n");
  std::mt19937 rng(7);
  for (const Shape3& s : shapes) {
    const std::vector<float> a = random_floats(s.m * s.k, rng), b = random_floats(s.k * s.n, rng);
    std::vector<float> c(static_cast<size_t>(s.m * s.n));
    ConstMatMap A(a.data(), s.m, s.k);
    MatMap C(c.data(), s.m, s.n);
    const int64_t block = (s.n + threads - 1) / threads;
    const double eigen_ms = bench::median_ms(5, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const int64_t c0 = t * block, n = std::min(block, s.n - c0);
        if (n <= 0) continue;
        if (s.b_transposed)
          C.middleCols(c0, n).noalias() = A * ConstMatMap(b.data(), s.n, s.k).middleRows(c0, n).transpose();
        else
          C.middleCols(c0, n).noalias() = A * ConstMatMap(b.data(), s.k, s.n).middleCols(c0, n);
      }
    });
    const cpu_gemm::Operand oa{a.data(), s.k, 1};
    const double packed_ms = bench::median_ms(5, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const int64_t c0 = t * block, n = std::min(block, s.n - c0);
        if (n <= 0) continue;
        const cpu_gemm::Operand ob = s.b_transposed ? cpu_gemm::Operand{b.data() + c0 * s.k, 1, s.k}
                                                    : cpu_gemm::Operand{b.data() + c0, s.n, 1};
        cpu_gemm::multiply(s.m, n, s.k, oa, ob, c.data() + c0, s.n);
      }
    });
    const double gflop = 2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9;
    std::printf("| %s | %lld x %lld x %lld | %.1f | %.1f | %.2f |\n", s.what, (long long)s.m,
                (long long)s.n, (long long)s.k, gflop / eigen_ms * 1e3, gflop / packed_ms * 1e3,
                eigen_ms / packed_ms);
  }
  return 0;
}
