// atlas attribute: attribution patching (core/analysis/attribution_patching.h), the gradient
// estimate of every cell of an activation-patching grid from one forward and backward per input;
// with --exact-top K the K strongest estimated cells are patched exactly (atlas patch's engine)
// and the two compared (Spearman rank correlation over those cells).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/tool_figure.h"
#include "app/cli/output_file.h"
#include "app/cli/patch_args.h"
#include "core/analysis/attribution_patching.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kAttributeUsage =
    "usage: atlas attribute MODEL --clean S --corrupted S --site resid|attn|mlp|head|head-pos\n"
    "                       [--direction denoise|noise] --metric logit-diff|prob|kl|loss\n"
    "                       [--tokens A,B] [--position P] [--ig-steps N] [--top K]\n"
    "                       [--exact-top K | --exact-all] [--max-memory MB] [--double]\n"
    "                       [--out-npy FILE] [--csv FILE] [--backend cpu|vulkan|auto] [--device D]\n"
    "  Attribution patching (AtP): every cell of atlas patch's grid estimated at once,\n"
    "    denoise: (a_clean - a_corrupted) . dM/da at the corrupted run\n"
    "    noise:   (a_corrupted - a_clean) . dM/da at the clean run\n"
    "  from one forward and one backward per input on the training tape, weights frozen.\n"
    "  Sites, metrics, --tokens, --position and the normalisation (clean 1, corrupted 0) are\n"
    "  atlas patch's.\n"
    "  --ig-steps N     integrated gradients: dM/da averaged over N runs whose input embeddings\n"
    "                   are interpolated from the corrupted to the clean input (midpoints)\n"
    "  --top K          the K cells with the largest |estimate| (default 10)\n"
    "  --exact-top K    also patch those K cells exactly (K forwards) and print both, with\n"
    "                   Spearman's rank correlation over them\n"
    "  --exact-all      patch every cell exactly: rank correlation over the grid and the\n"
    "                   overlap of the top-K (--top) cells\n"
    "  --max-memory MB  refuse when the backward's estimate (float weights + activations)\n"
    "                   exceeds MB (default: 90% of the available memory)\n"
    "  --double         run the tape in double (slower; the default is float)\n"
    "  --out-npy FILE   the normalised estimate grid, float32\n"
    "  --csv FILE       one row a cell: estimate and normalised (and the exact ones when run)\n"
    "  --backend, --device  where exact patching runs (the tape runs on the CPU)\n"
    "  Definitions: docs/patching.md, \"Attribution patching\"\n";

void write_attribute_csv(const std::string& path, const PatchResult& atp, const PatchResult* exact) {
  std::ostringstream out;
  out.precision(9);
  const bool heads = atp.spec.site == PatchSite::Head || atp.spec.site == PatchSite::HeadPos;
  const bool positions = atp.spec.site != PatchSite::Head;
  out << "layer" << (heads ? ",head" : "") << (positions ? ",position" : "") << ",estimate,normalised"
      << (exact ? ",exact,exact_normalised" : "") << '\n';
  auto value = [&](double v) {
    if (std::isfinite(v)) out << v;
  };
  const bool subset = exact && !exact->spec.cells.empty();
  for (size_t i = 0; i < atp.raw.size(); ++i) {
    const int64_t n = int64_t(i), last = atp.shape.back();
    if (atp.shape.size() == 3) out << n / (atp.shape[1] * last) << ',' << (n / last) % atp.shape[1] << ',' << n % last;
    else out << n / last << ',' << n % last;
    out << ',' << atp.raw[i] << ',';
    value(atp.normalised[i]);
    if (exact) {
      const bool ran = !subset || std::binary_search(exact->spec.cells.begin(), exact->spec.cells.end(), n);
      out << ',';
      if (ran) out << exact->raw[i];
      out << ',';
      if (ran) value(exact->normalised[i]);
    }
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

}  // namespace

int cmd_attribute(const std::vector<std::string>& args) {
  if (wants_help(args, (std::string(kAttributeUsage) + kToolFigureUsage +
                        "    --slice P      the position a head-pos grid's figure draws (default: the strongest "
                        "cell's)\n").c_str()))
    return 0;
  std::set<std::string> flags = kPatchSpecFlags;
  flags.insert({"--ig-steps", "--top", "--exact-top", "--max-memory", "--out-npy", "--csv",
                             "--backend", "--device", "--figure", "--plot", "--slice"});
  Args a(args, {flags, {"--exact-all", "--double"}});
  std::vector<std::string> tokens;
  PatchSpec spec = parse_patch_spec(a, "attribute", tokens);
  AttributionOptions options;
  options.ig_steps = a.get_int("--ig-steps", 0, 1, 10000);
  options.double_precision = a.has("--double");
  if (auto mb = a.get("--max-memory")) {  // megabytes, a decimal number
    char* end = nullptr;
    const double v = std::strtod(mb->c_str(), &end);
    if (mb->empty() || *end || !(v > 0) || v > 1e12)
      throw AtlasError("--max-memory " + printable(*mb) + " is not a positive number of megabytes (e.g. 4096 or 0.5)");
    options.max_memory = v * 1024 * 1024;
  }
  const int64_t top = a.get_int("--top", 10, 0, 100000);
  const int64_t exact_top = a.get_int("--exact-top", 0, 1, 100000);
  if (a.has("--exact-top") && a.has("--exact-all"))
    throw AtlasError("--exact-top K patches the K strongest estimated cells, --exact-all every cell: give one");
  for (const char* f : {"--out-npy", "--csv"})
    if (auto path = a.get(f)) check_output_file(f, *path);
  check_tool_figure_args(a);
  if (a.has("--slice") && (!a.has("--figure") || spec.site != PatchSite::HeadPos))
    throw AtlasError("--slice picks the position a head-pos grid's --figure draws; it needs --site head-pos and --figure");

  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const PatchInputs in = patch_inputs(model, a, tokens, spec);
  check_attribution_patching(model, in.clean, in.corrupted, spec, options);
  const bool tty = isatty(2);
  const PatchResult atp = attribution_patching(model, in.clean, in.corrupted, spec, options, [tty](int64_t d, int64_t t) {
    if (tty) std::fprintf(stderr, "\rattribution %lld / %lld passes", (long long)d, (long long)t);
  });
  if (tty) std::fprintf(stderr, "\n");

  const AttributionMemory mem = estimate_attribution_memory(model, int64_t(in.clean.size()), options.double_precision);
  std::printf("attribution patching (%s) of %s, %s, metric %s at position %lld: clean %.6g, corrupted %.6g\n",
              options.ig_steps ? ("integrated gradients, " + std::to_string(options.ig_steps) + " steps").c_str()
                               : "AtP",
              patch_site_name(spec.site), patch_direction_name(spec.direction), patch_metric_name(spec.metric),
              (long long)atp.position, atp.clean, atp.corrupted);
  std::string shape;
  for (int64_t s : atp.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(s);
  std::printf("grid %s, %lld tape passes, about %s held (%s); normalised: clean 1, corrupted 0\n", shape.c_str(),
              (long long)atp.runs, format_bytes(uint64_t(mem.total())).c_str(),
              options.double_precision ? "double" : "float");
  if (atp.clean == atp.corrupted)
    std::printf("the clean and corrupted runs have the same metric: the normalised values are undefined (NaN)\n");

  const std::vector<int64_t> order = cells_by_effect(atp);
  std::optional<PatchResult> exact;
  if (exact_top > 0 || a.has("--exact-all")) {
    PatchSpec exact_spec = spec;
    if (exact_top > 0) {
      exact_spec.cells.assign(order.begin(), order.begin() + std::min<int64_t>(exact_top, int64_t(order.size())));
      std::sort(exact_spec.cells.begin(), exact_spec.cells.end());
    }
    std::unique_ptr<Backend> backend = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
    RunOptions run;
    run.backend = backend.get();
    exact = activation_patching(model, in.clean, in.corrupted, exact_spec, run, [tty](int64_t d, int64_t t) {
      if (tty) std::fprintf(stderr, "\rexact patching %lld / %lld", (long long)d, (long long)t);
    });
    if (tty) std::fprintf(stderr, "\n");
  }
  const int64_t shown = exact_top > 0 ? std::min<int64_t>(exact_top, int64_t(order.size()))
                                      : std::min<int64_t>(top, int64_t(order.size()));
  if (shown > 0) std::printf("strongest estimated cells:%s\n", exact ? "            estimate      exact" : "");
  for (int64_t k = 0; k < shown; ++k) {
    const size_t i = size_t(order[size_t(k)]);
    if (exact)
      std::printf("  %-20s normalised %8.4f   %8.4f\n", patch_cell_label(atp, int64_t(i)).c_str(), atp.normalised[i],
                  exact->normalised[i]);
    else
      std::printf("  %-20s normalised %8.4f   metric %.6g\n", patch_cell_label(atp, int64_t(i)).c_str(),
                  atp.normalised[i], atp.raw[i]);
  }
  if (exact) {
    const std::vector<double> est = patch_effects(atp), ex = patch_effects(*exact);
    if (exact_top > 0) {
      std::vector<double> e1, e2;
      for (int64_t k = 0; k < shown; ++k) {
        e1.push_back(est[size_t(order[size_t(k)])]);
        e2.push_back(ex[size_t(order[size_t(k)])]);
      }
      std::printf("Spearman rank correlation over these %lld cells: %.4f (%lld exact runs)\n", (long long)shown,
                  spearman_rank_correlation(e1, e2), (long long)exact->runs);
    } else {
      const int64_t k = std::min<int64_t>(std::max<int64_t>(top, 1), int64_t(est.size()));
      std::printf("Spearman rank correlation over all %zu cells: %.4f; top-%lld overlap %lld of %lld (%lld exact runs)\n",
                  est.size(), spearman_rank_correlation(est, ex), (long long)k, (long long)top_k_overlap(est, ex, k),
                  (long long)k, (long long)exact->runs);
    }
  }
  if (auto f = a.get("--out-npy")) {
    write_npy(*f, patch_values_f32(atp.shape, atp.normalised), DType::F32);
    std::printf("wrote the normalised estimate grid to %s\n", f->c_str());
  }
  if (auto f = a.get("--csv")) {
    write_attribute_csv(*f, atp, exact ? &*exact : nullptr);
    std::printf("wrote %s\n", f->c_str());
  }
#if defined(ATLAS_HAVE_UI)
  write_tool_figure(a, [&] {
    // The estimate in the panel's grid; with --exact-all, the exact grid beside it (--exact-top
    // runs only some cells: its grid would show the others as unpatched).
    std::vector<ui::PanelPlot> plots{patch_grid_plot(a, atp, in.clean)};
    plots[0].name = "AtP estimate";
    plots[0].matrix.title = (options.ig_steps > 0 ? "integrated-gradients estimate: " : "AtP estimate: ") +
                            plots[0].matrix.title;
    if (exact && a.has("--exact-all")) {
      plots.push_back(patch_grid_plot(a, *exact, in.clean));
      plots[1].name = "exact patching of the same cells";
      plots[1].matrix.title = "exact: " + plots[1].matrix.title;
    }
    return plots;
  }, "Attribution patching");
#endif
  return 0;
}

}  // namespace atlas::cli
