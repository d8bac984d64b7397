// Head statistics (issue 22) on a long input: head_statistics over every map of the trace,
// against the forward that traced them, in the same run (target: within 2x of the forward).
//   bench_heads MODEL [--tokens N]   (a GPT-2-small folder: bench_load --keep DIR writes one)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/analysis/head_statistics.h"
#include "core/formats/model_io.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;
using Clock = std::chrono::steady_clock;

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
  std::vector<double> fwd, stats;
  RunResult r;
  for (int k = 0; k < 4; ++k) {
    auto t0 = Clock::now();
    r = model.forward(ids, {}, RunOptions{});
    fwd.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    t0 = Clock::now();
    const auto rows = head_statistics(r.trace);
    stats.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (rows.empty()) return 1;
  }
  std::sort(fwd.begin(), fwd.end());
  std::sort(stats.begin(), stats.end());
  std::printf("tokens %lld: forward %.1f ms, head statistics %.1f ms (%.2fx the forward)\n", (long long)n,
              fwd[fwd.size() / 2], stats[stats.size() / 2], stats[stats.size() / 2] / fwd[fwd.size() / 2]);
  return 0;
}
