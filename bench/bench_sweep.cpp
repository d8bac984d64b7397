// Ablation sweep cost: one sweep of every head against the forwards it is made of, in the
// same run. A sweep is 1 + layers x heads untraced forwards; the ratio shows what the hooks
// (a download, edit and upload of the heads' outputs per attention sub-layer) and the metric
// add on top of those forwards (ideal: 1.0).
//   bench_sweep MODEL [--tokens N] [--mode zero|mean] [--metric kl|loss]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_timing.h"
#include "core/analysis/ablation_sweep.h"
#include "core/formats/model_io.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_sweep MODEL [--tokens N] [--mode zero|mean] [--metric kl|loss]\n");
    return 2;
  }
  int64_t n = 128;
  SweepSpec spec;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) n = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--mode")) spec.mode = parse_ablation_mode(argv[i + 1], "--mode");
    if (!std::strcmp(argv[i], "--metric")) spec.metric = parse_sweep_metric(argv[i + 1], "--metric");
  }
  keep_freed_memory_for_reuse();  // as the app runs
  const Model model = load_model(argv[1]);
  std::vector<TokenInfo> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back({int32_t((i * 7919) % std::min<int64_t>(model.config().vocab_size, 50257)), "t"});
  RunOptions untraced;
  untraced.trace = TraceOptions::none();
  const double fwd = bench::median_ms(3, [&] { model.forward(ids, {}, untraced); });
  const auto start = std::chrono::steady_clock::now();
  const SweepResult r = ablation_sweep(model, ids, {}, spec, RunOptions{});
  const double sweep = bench::ms_since(start);
  const double forwards = double(1 + r.layers * r.heads);
  std::printf("tokens %lld, %s ablation of %lld x %lld heads, metric %s: sweep %.1f s, untraced forward %.1f ms; "
              "sweep / (%.0f forwards) = %.2fx\n",
              (long long)n, ablation_mode_name(spec.mode), (long long)r.layers, (long long)r.heads,
              sweep_metric_name(spec.metric), sweep / 1000.0, fwd, forwards, sweep / (forwards * fwd));
  return 0;
}
