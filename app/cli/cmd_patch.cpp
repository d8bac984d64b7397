// atlas patch: activation patching (core/analysis/patching.h) from a clean and a corrupted
// text of the same token length; the strongest cells on stdout, the grid as .npy and .csv.
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "app/cli/cmd_path_patch.h"
#include "app/cli/commands.h"
#include "app/cli/tool_figure.h"
#include "app/cli/patch_args.h"
#include "core/analysis/path_patching.h"
#include "core/analysis/patching.h"
#include "core/analysis/weight_check.h"
#include "core/formats/model_io.h"
#include "core/tensor/error.h"

namespace atlas::cli {
namespace {

const char* kPatchUsage =
    "usage: atlas patch MODEL --clean S --corrupted S [--target T] [--corrupted-target T]\n"
    "                   --site resid|attn|mlp|head|head-pos|q|k|v|pattern|path\n"
    "                   [--direction denoise|noise] --metric logit-diff|prob|kl|loss\n"
    "                   [--tokens A,B] [--position P] [--out DIR] [--top K]\n"
    "                   [--backend cpu|vulkan|auto] [--device D]\n"
    "  Activation patching: one activation of one run put into the other, every cell in turn.\n"
    "  The two texts must have the same number of tokens.\n"
    "  Encoder-decoder models: --clean and --corrupted are the sources (encoder inputs), --target\n"
    "  the clean run's target (decoder input, BOS added) and --corrupted-target the corrupted run's\n"
    "  (default --target); sources and targets each of the same length. Head sites: grid rows\n"
    "  are the attention sub-layers (encoder self-attention, then per decoder layer its self- and\n"
    "  cross-attention); resid: the encoder's layers, then the decoder's (attn, mlp refused).\n"
    "  Positions are source positions on encoder rows and target positions on decoder rows (cells\n"
    "  past a row's length NaN); --position is a target position.\n"
    "    --direction denoise  clean activations into the corrupted run (default)\n"
    "    --direction noise    corrupted activations into the clean run\n"
    "    --site resid     the residual stream before each layer x position (layer 0: embeddings)\n"
    "    --site attn      each attention sub-layer's output x position\n"
    "    --site mlp       each MLP output x position (pre-norm models)\n"
    "    --site head      each head's output at every position (layer x head)\n"
    "    --site head-pos  each head's output x position (layer x head x position)\n"
    "    --site q|k|v     each head's queries, keys or values at every position (layer x head;\n"
    "                     q and k after RoPE; grouped-query heads: the copy the head reads)\n"
    "    --site pattern   each head's attention probabilities (layer x head; softmax attention)\n"
    "    --site path --receivers L.H[,L.H...]|all --receiver-input q|k|v\n"
    "                     path patching (Wang et al. 2022): each sender head's effect on the\n"
    "                     receivers' q, k or v only, the other heads frozen (sender layer x head;\n"
    "                     all: sender layer x head x receiver layer x head)\n"
    "    --metric logit-diff  logit[A] - logit[B] at --position (default the last)\n"
    "    --metric prob    probability of A;  --metric loss  -log P(A);  --metric kl  KL(clean || patched)\n"
    "  --tokens A,B     a token's text (one token each; GPT-2: \" Mary\" with its space) or #ID\n"
    "  Values are normalised: the clean run 1, the corrupted run 0 (both directions).\n"
    "  --out DIR        grid.npy (normalised, float32), raw.npy (the metric), runs.npy (the clean\n"
    "                   and corrupted metric) and grid.csv\n"
    "  --top K          the K cells farthest from the unpatched run (default 10)\n"
    "  Definitions: docs/patching.md\n";

}  // namespace

int cmd_patch(const std::vector<std::string>& args) {
  if (wants_help(args, (std::string(kPatchUsage) + kToolFigureUsage +
                        "    --slice P      the position a head-pos grid's figure draws (default: the strongest "
                        "cell's)\n").c_str()))
    return 0;
  std::set<std::string> flags = kPatchSpecFlags;
  flags.insert({"--out", "--top", "--backend", "--device", "--receivers", "--receiver-input", "--target",
                "--corrupted-target", "--figure", "--plot", "--slice"});
  Args a(args, {flags, {}});
  const bool path = a.get_or("--site", "") == "path";
  if (!path && (a.has("--receivers") || a.has("--receiver-input")))
    throw AtlasError("--receivers and --receiver-input are for --site path (path patching)");
  std::vector<std::string> tokens;
  PatchSpec spec = parse_patch_spec(a, "patch", tokens, /*path_site=*/true);
  PathPatchSpec path_spec;
  if (path) {
    if (!a.has("--receivers") || !a.has("--receiver-input"))
      throw AtlasError("--site path needs --receivers L.H[,L.H...] or all, and --receiver-input q, k or v");
    path_spec.receivers = parse_receivers(a.require("--receivers"), "--receivers");
    path_spec.input = parse_receiver_input(a.require("--receiver-input"), "--receiver-input");
  }
  const int64_t top = a.get_int("--top", 10, 0, 100000);
  check_tool_figure_args(a);
  const auto slice = a.get_index("--slice");
  if (slice && (!a.has("--figure") || spec.site != PatchSite::HeadPos))
    throw AtlasError("--slice picks the position a head-pos grid's --figure draws; it needs --site head-pos and --figure");
  if (auto f = a.get("--out")) {
    std::error_code ec;
    if (std::filesystem::exists(*f, ec) && !std::filesystem::is_directory(*f, ec))
      throw AtlasError("--out " + *f + " exists and is not a folder; give a folder for the grid files");
  }

  const Model model = load_model(a.positionals()[0]);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const PatchInputs in = patch_inputs(model, a, tokens, spec, /*check=*/!path, /*targets=*/!path);
  const std::vector<TokenInfo>& clean = in.clean;
  const std::vector<TokenInfo>& corrupted = in.corrupted;
  path_spec.patch = spec;
  if (path) check_path_patching(model, clean, corrupted, path_spec);

  std::unique_ptr<Backend> backend = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
  RunOptions options;
  options.backend = backend.get();
  const bool tty = isatty(2);
  if (path) return print_path_patching(model, clean, corrupted, path_spec, options, top, a);
  const bool enc_dec = model.config().architecture == Architecture::EncoderDecoder;
  const auto show_progress = [tty](int64_t done, int64_t total) {
    if (tty) std::fprintf(stderr, "\rpatching %lld / %lld", (long long)done, (long long)total);
  };
  const PatchResult r =
      enc_dec ? activation_patching(model, in.clean_input(), in.corrupted_input(), spec, options, show_progress)
              : activation_patching(model, clean, corrupted, spec, options, show_progress);
  if (tty) std::fprintf(stderr, "\n");

  std::printf("%s patching of %s, metric %s at %sposition %lld: clean %.6g, corrupted %.6g\n",
              patch_direction_name(spec.direction), patch_site_name(spec.site), patch_metric_name(spec.metric),
              enc_dec ? "target " : "", (long long)r.position, r.clean, r.corrupted);
  std::string shape;
  for (int64_t s : r.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(s);
  const char* rows = enc_dec && spec.site != PatchSite::Resid ? "attention sub-layers" : "layers";
  std::printf("grid %s (%s x %s), %lld patched runs; normalised: clean 1, corrupted 0\n", shape.c_str(), rows,
              r.shape.size() == 3 ? "heads x positions" : patch_site_per_head(spec.site) ? "heads" : "positions",
              (long long)r.runs);
  if (enc_dec) {
    std::printf("rows:");
    for (size_t i = 0; i < r.row_names.size(); ++i) std::printf(" %zu %s%s", i, r.row_names[i].c_str(),
                                                                i + 1 < r.row_names.size() ? "," : "\n");
    if (r.shape.size() == 3 || spec.site == PatchSite::Resid)
      std::printf("positions: source positions on encoder rows, target positions on decoder rows; cells past a "
                  "row's length are NaN\n");
  }
  report_patch_grid({r.shape, r.raw, r.normalised, r.clean, r.corrupted,
                     spec.direction == PatchDirection::Denoise ? r.corrupted : r.clean},
                    top, [&r, enc_dec](int64_t i) { return patch_cell_label(r, i, enc_dec); }, a.get("--out"),
                    [&r](const std::string& path) { write_patch_csv(path, r); });
#if defined(ATLAS_HAVE_UI)
  write_tool_figure(a, [&] { return std::vector<ui::PanelPlot>{patch_grid_plot(a, r, clean)}; }, "Activation patching");
#endif
  return 0;
}

}  // namespace atlas::cli
