// atlas ablate: ablation sweeps (core/analysis/ablation_sweep.h): every head or every layer
// removed in turn, with the change of a metric of the output; a table and the strongest
// cells, or the data (.npy, .csv, JSON) and the figure (.svg, .pdf, .png) for scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/output_file.h"
#include "core/analysis/ablation_sweep.h"
#include "core/analysis/weight_check.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include "app/cli/headless_qt.h"
#include "ui/export/figure_export.h"
#include "ui/tools/sweep_figure.h"
#endif

namespace atlas::cli {
namespace {

const char* kAblateUsage =
    "usage: atlas ablate MODEL (--text S | --text-file F) [--target S] --sweep heads|layers\n"
    "                    [--mode zero|mean] [--metric kl|loss|logit-diff|cosine]\n"
    "                    [--token-a T --token-b T] [--position P]\n"
    "                    [--out FILE.(npy|csv|svg|pdf|png) | --json] [--top K]\n"
    "                    [--backend cpu|vulkan|auto] [--device D]\n"
    "  Removes every head (or every layer) in turn and measures the model's output on the text:\n"
    "    --sweep heads    each (layer, head); layers are numbered over all stacks\n"
    "    --sweep layers   each layer\n"
    "    --mode zero      the head's output (the layer's update) is 0: a zeroed head equals\n"
    "                     atlas run --drop-heads L:H, a zeroed layer --drop-layers L (default)\n"
    "    --mode mean      replaced by its mean over the input's positions in the clean run\n"
    "    --metric kl      mean KL(clean || ablated) of the output distributions (default)\n"
    "    --metric loss    next-token loss on the text (causal models)\n"
    "    --metric logit-diff  logit[token-a] - logit[token-b] at --position (default the last)\n"
    "    --metric cosine  mean cosine of the final hidden states (models without an output head)\n"
    "  --token-a/--token-b  a token's text (must be one token; GPT-2: \" Mary\" with its space)\n"
    "                   or its id as #ID\n"
    "  --out FILE       .npy: the [layers, heads] effects (ablated metric - clean metric) as\n"
    "                   float32; .csv: one row per cell with metric and effect; .svg/.pdf/.png:\n"
    "                   the figure the app's Ablation sweep panel shows. --json: all on stdout\n"
    "  --top K          the K cells with the largest effect after the table (default 5)\n"
    "  Formulas: docs/ablation-sweep.md\n";

std::string cell_name(const SweepResult& r, int64_t l, int64_t h) {
  const std::string layer = r.row_labels[size_t(l)];
  return r.spec.unit == SweepUnit::Heads ? layer + "H" + std::to_string(h) : layer;
}

void write_sweep_csv(const std::string& path, const SweepResult& r) {
  std::ostringstream out;
  out.precision(9);
  out << "layer,head,metric,effect\n";
  for (int64_t l = 0; l < r.layers; ++l)
    for (int64_t h = 0; h < r.heads; ++h) {
      const double v = r.values[size_t(l * r.heads + h)];
      out << l << ',';
      if (r.spec.unit == SweepUnit::Heads) out << h;
      out << ',';
      if (std::isfinite(v)) out << v << ',' << r.effect(l, h);  // empty: a cell that could not run
      else out << ',';
      out << '\n';
    }
  write_file_atomically(path, out.str());
}

nlohmann::json sweep_json(const SweepResult& r) {
  nlohmann::json cells = nlohmann::json::array();
  for (int64_t l = 0; l < r.layers; ++l)
    for (int64_t h = 0; h < r.heads; ++h) {
      const double v = r.values[size_t(l * r.heads + h)];
      nlohmann::json c = {{"layer", l}};
      if (r.spec.unit == SweepUnit::Heads) c["head"] = h;
      c["metric"] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
      c["effect"] = std::isfinite(v) ? nlohmann::json(r.effect(l, h)) : nlohmann::json(nullptr);
      cells.push_back(c);
    }
  nlohmann::json j = {{"sweep", sweep_unit_name(r.spec.unit)}, {"mode", ablation_mode_name(r.spec.mode)},
                      {"metric", sweep_metric_name(r.spec.metric)}, {"layers", r.layers},
                      {"heads", r.heads}, {"row_labels", r.row_labels}, {"clean", r.clean}, {"cells", cells}};
  if (r.spec.metric == SweepMetric::LogitDiff) {
    j["token_a"] = r.spec.token_a;
    j["token_b"] = r.spec.token_b;
    j["position"] = r.position;
  }
  return j;
}

void write_figure(const std::string& path, const SweepResult& r) {
#if defined(ATLAS_HAVE_UI)
  auto app = make_headless_app();
  ui::FigureSpec spec;
  spec.mapping = ui::sweepColorMapping(r);
  ui::writeFigure(ui::heatmapFigureContent(ui::sweepHeatmap(r), spec), spec.dpi, QString::fromStdString(path));
#else
  (void)r;
  throw AtlasError("--out " + path + ": figures are drawn by the Qt UI, which this atlas was built without "
                   "(ATLAS_GUI=OFF); write .npy, .csv or --json");
#endif
}

}  // namespace

int cmd_ablate(const std::vector<std::string>& args) {
  if (wants_help(args, kAblateUsage)) return 0;
  Args a(args, {{"--text", "--text-file", "--target", "--sweep", "--mode", "--metric", "--token-a", "--token-b",
                 "--position", "--out", "--top", "--backend", "--device"},
                {"--json"}});
  if (a.positionals().size() != 1) throw AtlasError("ablate takes one MODEL (see atlas ablate --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) != 1)
    throw AtlasError("ablate needs exactly one of --text, --text-file");
  if (!a.has("--sweep")) throw AtlasError("ablate needs --sweep heads or --sweep layers");
  if (a.has("--out") && a.has("--json")) throw AtlasError("ablate writes one of --out, --json");
  std::string out_ext;
  if (auto f = a.get("--out")) {
    check_output_file("--out", *f);
    out_ext = lowercase_extension(*f);
    if (out_ext != "npy" && out_ext != "csv" && out_ext != "svg" && out_ext != "pdf" && out_ext != "png")
      throw AtlasError("--out " + *f + ": unknown format \"" + out_ext + "\" (use .npy, .csv, .svg, .pdf or .png)");
  }
  SweepSpec spec;
  spec.unit = parse_sweep_unit(a.require("--sweep"), "--sweep");
  spec.mode = parse_ablation_mode(a.get_or("--mode", "zero"), "--mode");
  const bool logit_diff = a.has("--metric") && a.get_or("--metric", "") == "logit-diff";
  if (!logit_diff && (a.has("--token-a") || a.has("--token-b") || a.has("--position")))
    throw AtlasError("--token-a, --token-b and --position belong to --metric logit-diff");
  if (logit_diff && !(a.has("--token-a") && a.has("--token-b")))
    throw AtlasError("--metric logit-diff needs --token-a and --token-b");
  const int64_t top = a.get_int("--top", 5, 0, 100000);

  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  spec.metric = a.has("--metric") ? parse_sweep_metric(a.require("--metric"), "--metric")
                : model.config().output == OutputHead::None ? SweepMetric::Cosine
                                                            : SweepMetric::KL;
  if (logit_diff) {
    spec.token_a = single_token_id(model, a.require("--token-a"), "--token-a");
    spec.token_b = single_token_id(model, a.require("--token-b"), "--token-b");
    // Checked against the input's positions by check_sweep, which names their range.
    if (auto p = a.get_index("--position")) spec.position = p->value;
  }
  const std::string text = a.has("--text") ? a.require("--text")
                                           : read_input_file(a.require("--text-file"), InputKind::Text);
  const auto [source, target] = model.tokenize(text, a.get_or("--target", ""));
  check_sweep(model, source, target, spec);

  std::unique_ptr<Backend> backend = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
  RunOptions options;
  options.backend = backend.get();
  const bool tty = isatty(2);
  const SweepResult r = ablation_sweep(model, source, target, spec, options, [tty](int64_t done, int64_t total) {
    if (tty) std::fprintf(stderr, "\rablating %lld / %lld", (long long)done, (long long)total);
  });
  if (tty) std::fprintf(stderr, "\n");

  if (auto f = a.get("--out")) {
    if (out_ext == "npy") {
      Tensor t({r.layers, r.heads});
      for (int64_t l = 0; l < r.layers; ++l)
        for (int64_t h = 0; h < r.heads; ++h) t.data[size_t(l * r.heads + h)] = float(r.effect(l, h));
      write_npy(*f, t, DType::F32);
    } else if (out_ext == "csv") {
      write_sweep_csv(*f, r);
    } else {
      write_figure(*f, r);
    }
    std::printf("wrote the %s sweep (%lld x %lld) to %s\n", sweep_unit_name(spec.unit), (long long)r.layers,
                (long long)r.heads, f->c_str());
    return 0;
  }
  if (a.has("--json")) {
    std::printf("%s\n", sweep_json(r).dump(1).c_str());
    return 0;
  }
  std::printf("%s ablation of %s, metric %s; clean run: %.6g\n", ablation_mode_name(spec.mode),
              sweep_unit_name(spec.unit), sweep_metric_name(spec.metric), r.clean);
  std::printf("effect = ablated - clean, rows layers%s\n", spec.unit == SweepUnit::Heads ? ", columns heads" : "");
  std::printf("%6s", "");
  for (int64_t h = 0; h < r.heads; ++h)
    std::printf(" %10s", spec.unit == SweepUnit::Heads ? ("H" + std::to_string(h)).c_str() : "effect");
  std::printf("\n");
  for (int64_t l = 0; l < r.layers; ++l) {
    std::printf("%6s", r.row_labels[size_t(l)].c_str());
    for (int64_t h = 0; h < r.heads; ++h) {
      const double e = r.effect(l, h);
      if (std::isfinite(e)) std::printf(" %10.4g", e);
      else std::printf(" %10s", "n/a");
    }
    std::printf("\n");
  }
  std::vector<std::pair<double, int64_t>> order;
  for (int64_t i = 0; i < r.layers * r.heads; ++i)
    if (std::isfinite(r.values[size_t(i)])) order.push_back({std::fabs(r.values[size_t(i)] - r.clean), i});
  std::stable_sort(order.begin(), order.end(), [](auto& x, auto& y) { return x.first > y.first; });
  if (top > 0 && !order.empty()) {
    std::printf("\nlargest effects:");
    for (int64_t k = 0; k < top && k < int64_t(order.size()); ++k) {
      const int64_t i = order[size_t(k)].second;
      std::printf("  %s (%+.4g)", cell_name(r, i / r.heads, i % r.heads).c_str(), r.values[size_t(i)] - r.clean);
    }
    std::printf("\n");
  }
  if (std::any_of(r.values.begin(), r.values.end(), [](double v) { return !std::isfinite(v); }))
    std::printf("n/a: the layer is the only one of its stack; removing it leaves nothing to run\n");
  return 0;
}

}  // namespace atlas::cli
