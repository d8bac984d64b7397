// Head statistics on a long input: head_statistics over every map of the trace,
// against the forward that traced them, in the same run (target: within 2x of the forward).
//   bench_heads MODEL [--tokens N]   (a GPT-2-small folder: bench_load --keep DIR writes one)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_timing.h"
#include "core/analysis/head_statistics.h"
#include "core/formats/model_io.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_heads MODEL [--tokens N]\n");
    return 2;
  }
  int64_t n = 512;
  for (int i = 2; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--tokens")) n = std::atoll(argv[i + 1]);
  keep_freed_memory_for_reuse();  // as the app runs
  const Model model = load_model(argv[1]);
  std::vector<TokenInfo> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back({int32_t((i * 7919) % std::min<int64_t>(model.config().vocab_size, 50257)), "t"});
  RunResult r;
  const double fwd = bench::median_ms(3, [&] { r = model.forward(ids, {}, RunOptions{}); });
  size_t heads = 0;
  const double stats = bench::median_ms(3, [&] { heads = head_statistics(r.trace).size(); });
  if (heads == 0) return 1;
  std::printf("tokens %lld: forward %.1f ms, head statistics %.1f ms (%.2fx the forward)\n", (long long)n, fwd,
              stats, stats / fwd);
  return 0;
}
