// Attribution patching cost and quality: the AtP estimate of a layer x position grid (denoising,
// logit difference) on a GPT-2-small-shaped model with random weights, timed against one
// untraced forward of the same input in the same run (alternated, medians); the target
// is AtP <= 4 forwards. With --exact the whole grid is also patched exactly and the estimate
// compared: Spearman's rank correlation over the cells and the overlap of the top-K cells.
// --model runs a model file instead (e.g. a 1B-shaped GGUF from bench/make_llama_gguf).
//   bench_attribution_patching [--tokens N] [--layers N] [--model SPEC] [--site S] [--ig-steps N] [--exact K]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/patching_bench_case.h"
#include "core/analysis/attribution_patching.h"
#include "core/formats/model_io.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/allocation_policy.h"

using namespace atlas;

int main(int argc, char** argv) {
  int64_t n = 64, layers = 12, exact_k = 0;
  std::string model_spec;
  PatchSpec spec;
  AttributionOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tokens")) n = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--layers")) layers = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--site")) spec.site = parse_patch_site(argv[i + 1], "--site");
    if (!std::strcmp(argv[i], "--ig-steps")) options.ig_steps = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--exact")) exact_k = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--model")) model_spec = argv[i + 1];
  }
  keep_freed_memory_for_reuse();  // as the app runs
  // GPT-2's composition at GPT-2-small's shape, or the file's model
  const Model model = model_spec.empty() ? Model(bench::gpt2_small_shaped(layers), init_params(bench::gpt2_small_shaped(layers), 1))
                                         : load_model(model_spec);
  const ModelConfig& c = model.config();
  const auto [clean, corrupted] = bench::patching_case(c, n, spec);
  RunOptions untraced;
  untraced.trace = TraceOptions::none();
  model.forward(clean, {}, untraced);  // warm-up
  // The weights' float copy for the tape, once per model (the GUI and a sweep reuse it).
  auto t_convert = std::chrono::steady_clock::now();
  options.weights = attribution_weights(model, false);
  const double convert_ms = bench::ms_since(t_convert);
  std::vector<double> fwd, atp;
  PatchResult r;
  for (int rep = 0; rep < 3; ++rep) {  // alternated: a shared machine changes speed over minutes
    auto t0 = std::chrono::steady_clock::now();
    model.forward(clean, {}, untraced);
    fwd.push_back(bench::ms_since(t0));
    t0 = std::chrono::steady_clock::now();
    r = attribution_patching(model, clean, corrupted, spec, options);
    atp.push_back(bench::ms_since(t0));
  }
  const double f = bench::median(fwd), a = bench::median(atp);
  const AttributionMemory mem = estimate_attribution_memory(model, n, false);
  std::printf("tokens %lld, %s grid, %s: AtP %.1f ms (%lld tape passes), untraced forward %.1f ms; "
              "AtP / forward = %.2fx; memory estimate %.0f MB (weights %.0f MB); weights converted once "
              "in %.1f ms\n",
              (long long)n, patch_site_name(spec.site), options.ig_steps ? "integrated gradients" : "AtP", a,
              (long long)r.runs, f, a / f, mem.total() / 1e6, mem.weights / 1e6, convert_ms);
  if (exact_k > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const PatchResult exact = activation_patching(model, clean, corrupted, spec, RunOptions{});
    const std::vector<double> est = patch_effects(r), ex = patch_effects(exact);
    std::printf("exact grid %.1f s (%lld runs): Spearman over %zu cells %.4f; top-%lld overlap %lld; "
                "clean %.6g corrupted %.6g\n",
                bench::ms_since(t0) / 1000.0, (long long)exact.runs, est.size(), spearman_rank_correlation(est, ex),
                (long long)exact_k, (long long)top_k_overlap(est, ex, exact_k), exact.clean, exact.corrupted);
  }
  return 0;
}
