// Activation patching cost: the layer x position grid of the residual stream (denoising,
// logit-difference metric) on a GPT-2-small-shaped model with random weights, against one
// untraced forward of the same input in the same run. A grid is 2 recording runs plus one run
// per cell; the ratio grid / (cells x forward) shows what the hooks and the metric add (ideal
// 1.0; below 1 only if a patched run reuses the unchanged prefix, which it does not yet).
//   bench_patching [--tokens N] [--layers N] [--site resid|attn|mlp|head|head-pos]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/patching_bench_case.h"
#include "core/analysis/patching.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

int main(int argc, char** argv) {
  int64_t n = 64, layers = 12;
  PatchSpec spec;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) n = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--site")) spec.site = parse_patch_site(argv[i + 1], "--site");
  }
  keep_freed_memory_for_reuse();  // as the app runs
  const ModelConfig c = bench::gpt2_small_shaped(layers);  // GPT-2's composition at GPT-2-small's shape
  const Model model(c, init_params(c, 1));
  const auto [clean, corrupted] = bench::patching_case(c, n, spec);
  RunOptions untraced;
  untraced.trace = TraceOptions::none();
  const double fwd_before = bench::median_ms(3, [&] { model.forward(clean, {}, untraced); });
  // One untraced forward every 32 cells, timed in the grid's own conditions (a machine shared
  // with other work changes speed over minutes) and taken out of the grid's time.
  std::vector<double> fwd;
  double excluded = 0;
  const auto start = std::chrono::steady_clock::now();
  const PatchResult r = activation_patching(model, clean, corrupted, spec, RunOptions{}, [&](int64_t done, int64_t) {
    if (done % 32 != 0) return;
    const auto t0 = std::chrono::steady_clock::now();
    model.forward(clean, {}, untraced);
    fwd.push_back(bench::ms_since(t0));
    excluded += bench::ms_since(t0);
  });
  const double grid = bench::ms_since(start) - excluded;
  int64_t cells = 1;
  for (int64_t s : r.shape) cells *= s;
  const double f = bench::median(fwd);
  std::printf("tokens %lld, %s grid %lld cells (%lld runs + 2 recording): grid %.1f s; untraced forward %.1f ms "
              "(median of %zu taken during the grid; %.1f ms before it); grid / (%lld forwards) = %.2fx\n",
              (long long)n, patch_site_name(spec.site), (long long)cells, (long long)r.runs, grid / 1000.0, f,
              fwd.size(), fwd_before, (long long)cells, grid / (double(cells) * f));
  return 0;
}
