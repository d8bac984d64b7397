// Forward-pass benchmark of the base encoder (seed 002 shape: 6 layers, d 512, 8 heads,
// d_ff 2048) at 128 and 512 tokens with attention tracing on, against the throughput of one
// large Eigen GEMM (512 x 2048 x 2048) measured in the same run, so the ratio is comparable
// across machines. Usage: bench_forward [--repeats R] [--threads T]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_timing.h"
#include "core/model/estimate.h"
#include "core/formats/model_io.h"

using namespace atlas;
using atlas::bench::median_ms;

int main(int argc, char** argv) {
  int repeats = 7, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  if (threads > 0) Eigen::setNbThreads(threads);

  const int M = 512, K = 2048, N = 2048;
  Mat a = Mat::Random(M, K), b = Mat::Random(K, N), c(M, N);
  const double gemm_ms = median_ms(repeats, [&] { c.noalias() = a * b; });
  const double gemm_gflops = 2.0 * M * K * N / (gemm_ms * 1e6);
  std::printf("{\"bench\": \"eigen_gemm_512x2048x2048\", \"median_ms\": %.3f, \"gflops\": %.1f, "
              "\"threads\": %d}\n", gemm_ms, gemm_gflops, Eigen::nbThreads());

  Model model = load_model("preset:base-encoder");
  for (int64_t length : {128, 512}) {
    std::vector<TokenInfo> tokens(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i) tokens[static_cast<size_t>(i)] = {int32_t((i * 7 + 32) % 256), ""};
    RunOptions options;  // default tracing: attention probabilities, masks, positions
    const double ms = median_ms(repeats, [&] { model.forward(tokens, {}, options); });
    const double gflops = estimate_cost(model.config(), length).flops / (ms * 1e6);
    std::printf("{\"bench\": \"base_encoder_forward\", \"length\": %lld, \"median_ms\": %.2f, "
                "\"gflops\": %.1f, \"ratio_to_gemm\": %.2f}\n",
                static_cast<long long>(length), ms, gflops, gflops / gemm_gflops);
  }
  return 0;
}
