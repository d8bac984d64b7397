// atlas run: tokenize, run, print a summary, optionally dump every traced array.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/analysis/ablation.h"
#include "core/analysis/weight_check.h"
#include "core/model/memory_budget.h"
#include "app/cli/ablation_args.h"
#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/formats/input_file.h"
#include "core/tensor/checked_math.h"
#include "core/tensor/error.h"
#include "app/cli/image_file.h"
#include "app/cli/image_run.h"
#include "core/input/patch_input.h"
#include "core/formats/model_io.h"

namespace atlas::cli {

namespace {

const char* kRunUsage =
    "usage: atlas run MODEL (--text S | --text-file F | --image FILE) [--target S] [--seed N]\n"
    "                 [--dump DIR]\n"
    "                 [--scores] [--hidden] [--value-norms] [--maps auto|stored|on-demand]\n"
    "                 [--only-maps MAP,MAP...]\n"
    "                 [--pad-to N] [--threads T]\n"
    "                 [--backend cpu|vulkan|auto] [--device D]\n"
    "  Runs MODEL on the text and prints the tokens and the traced arrays.\n"
    "  --image FILE  an image for a ViT (patches, e.g. preset:tiny-vit or a HF ViT directory) or a\n"
    "                pixel model (local2d, bytes vocab: e.g. preset:tiny-local2d):\n"
    "                one token per grey value (or R, G, B with sparse.image_channels 3) in raster\n"
    "                order, resampled to sparse.image_width; PNG/JPEG/... (binary PPM without Qt)\n"
    "  --target S    decoder input of an encoder-decoder model\n"
    "  --seed N      weight seed of a preset:NAME model\n"
    "  --dump DIR    write DIR/manifest.json and one .npy per traced array\n"
    "  --scores      also trace pre-softmax scores; --hidden: hidden states per layer\n"
    "  --maps M      full-attention maps stored [heads, Lq, Lk] or computed on request from the\n"
    "                traced queries and keys (<map>.q, <map>.k); auto: on request above 2^28\n"
    "                weights in all (docs/dump-format.md)\n"
    "  --only-maps M1,M2  trace only these attention maps (e.g. decoder.layer1.self_attn) with\n"
    "                their companions (<map>.*); other arrays as ever. A name that is no map of\n"
    "                the run is refused after the run, listing its maps\n"
    "  --value-norms also trace <map>.value_norms [heads, Lk]: |W^O_h v_j|, for value-weighted\n"
    "                attention (alpha_ij times entry j; docs/aggregates.md)\n"
    "  --pad-to N    pad the input with the model's pad token (shows the padding mask)\n"
    "  --drop-layers 1,3      ablation: run without these layers (numbered over all stacks)\n"
    "  --layerdrop-rate P     ablation: LayerDrop every-other pruning at rate P in (0, 1]\n"
    "  --drop-heads L:H,...   ablation: zero these heads (DropHead at inference)\n"
    "                Ablations print and dump ablation.kl [L] (models with logits) or\n"
    "                ablation.cosine [L] against the full model.\n"
    "  --logit-lens K         per-layer top-K predictions: <stack>.logit_lens.ids / .probs\n"
    "                         [layers, L, K] (models with an output head)\n"
    "  --top-k K     print the K most likely next tokens with probabilities (default 3)\n";

// --only-maps a,b: the names, none empty (TraceOptions::only_maps).
std::vector<std::string> only_maps_arg(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty())
      throw AtlasError("--only-maps \"" + printable(value, 200) +
                       "\" holds an empty name; give map names separated by commas (e.g. decoder.layer0.self_attn)");
    out.push_back(std::move(name));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

void print_tokens(const char* what, const std::vector<TokenInfo>& tokens) {
  std::printf("%s (%zu):", what, tokens.size());
  for (size_t i = 0; i < tokens.size() && i < 64; ++i) std::printf(" %s", printable(tokens[i].label).c_str());
  if (tokens.size() > 64) std::printf(" ...");
  std::printf("\n");
}

// Top-k of the softmax over the last position's logits: what the model would put next.
void print_prediction(const Model& model, const Tensor& logits, int64_t position,
                      const std::string& heading, size_t top) {
  const int64_t V = logits.shape[1];
  const float* row = logits.data.data() + position * V;
  const float mx = *std::max_element(row, row + V);
  double z = 0;
  for (int64_t v = 0; v < V; ++v) z += std::exp(double(row[v] - mx));
  std::vector<int64_t> ids(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) ids[static_cast<size_t>(v)] = v;
  const size_t k = std::min<size_t>(top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(k), ids.end(),
                    [&](int64_t x, int64_t y) { return row[x] > row[y]; });
  std::printf("%s:", heading.c_str());
  for (size_t i = 0; i < k; ++i) {
    const int32_t id = static_cast<int32_t>(ids[i]);
    const std::string label = id < model.tokenizer().vocab_size() ? model.tokenizer().label(id)
                                                                   : std::string("<").append(std::to_string(id)).append(">");
    std::printf(" %s %.3f", printable(label).c_str(), std::exp(double(row[id] - mx)) / z);
  }
  std::printf("\n");
}

// What the logits mean depends on the model: a ViT classifies from [CLS] (position 0), a
// masked LM fills each [MASK], a decoder predicts the next token after the last position.
void print_predictions(const Model& model, const RunResult& result, size_t top) {
  const ModelConfig& c = model.config();
  if (is_patch_model(c)) {
    print_prediction(model, result.output, 0,
                     c.embeddings.patches.cls ? "class (from [CLS])" : "class (from patch 0)", top);
    return;
  }
  if (c.architecture == Architecture::Encoder) {
    bool any = false;
    const auto& tokens = result.trace.source_tokens;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].label == "[MASK]") {
        print_prediction(model, result.output, int64_t(i), "fill for [MASK] at " + std::to_string(i), top);
        any = true;
      }
    if (any) return;
  }
  print_prediction(model, result.output, result.output.shape[0] - 1, "prediction at the last position", top);
}


// Runs the pruned model, adds ablation.kl / ablation.cosine to the trace, prints a summary.
void print_ablation(const Model& model, RunResult& result, const AblationSpec& spec,
                    const RunOptions& options) {
  const std::vector<double> per = compare_ablation(model, result, spec, options);
  std::printf("ablation: dropped layers");
  for (int64_t l : ablated_layers(model.config(), spec)) std::printf(" %lld", static_cast<long long>(l));
  std::printf("; dropped heads");
  for (const auto& [l, h] : spec.drop_heads)
    std::printf(" %lld:%lld", static_cast<long long>(l), static_cast<long long>(h));
  double mean = 0, mx = 0;
  for (double v : per) {
    mean += v;
    mx = std::max(mx, v);
  }
  mean /= double(std::max<size_t>(1, per.size()));
  if (result.is_logits)
    std::printf("\n  KL(full || ablated) of next-token distributions: mean %.6g, max %.6g nats\n", mean, mx);
  else
    std::printf("\n  cosine of full and ablated hidden states: mean %.6g\n", mean);
  std::printf("  per position:");
  for (size_t i = 0; i < per.size() && i < 32; ++i) std::printf(" %.4g", per[i]);
  std::printf(per.size() > 32 ? " ...\n" : "\n");
}

// --logit-lens K keeps ids and probabilities [layers, L, K] (8 bytes a cell): K is capped so
// that the longest input the model takes stays within kLensBudget, instead of failing (or being
// killed) mid-run on a K near a 50k vocabulary.
constexpr int64_t kLensBudget = int64_t(1) << 30;

int64_t logit_lens_k(const Args& a, const ModelConfig& c) {
  if (!a.has("--logit-lens")) return 0;
  int64_t layers = std::max(c.n_layers, c.decoder_layers());
  if (c.universal()) layers = std::max(layers, c.universal()->max_steps);
  const int64_t per_k = checked_mul(checked_mul(std::max<int64_t>(1, layers), std::max<int64_t>(1, c.max_positions),
                                                "layers", "max_positions"),
                                    8, "--logit-lens cells", "bytes");
  const int64_t fits = std::max<int64_t>(1, kLensBudget / per_k);
  const int64_t hi = std::min(c.vocab_size, fits);
  const long long k = a.get_int("--logit-lens", 0, 0, c.vocab_size);
  if (k > hi)
    throw AtlasError("--logit-lens " + std::to_string(k) + " would keep [" + std::to_string(layers) +
                     " layers, up to " + std::to_string(c.max_positions) + " positions, " + std::to_string(k) +
                     "] ids and probabilities (" + format_bytes(uint64_t(per_k) * uint64_t(k)) +
                     "); give at most " + std::to_string(hi) + " (" + format_bytes(uint64_t(kLensBudget)) +
                     ")");
  return k;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  if (wants_help(args, kRunUsage)) return 0;
  Args a(args, {{"--text", "--text-file", "--image", "--target", "--seed", "--dump", "--pad-to", "--threads",
                 "--drop-layers", "--layerdrop-rate", "--drop-heads", "--logit-lens", "--top-k",
                 "--backend", "--device", "--maps", "--only-maps"},
                {"--scores", "--hidden", "--value-norms"}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (a.positionals().size() != 1) throw AtlasError("run takes one MODEL (see atlas run --help)");
  if (int(a.has("--text")) + int(a.has("--text-file")) + int(a.has("--image")) != 1)
    throw AtlasError("give exactly one of --text, --text-file or --image");
  // Text files: regular files only, capped, read without blocking (core/formats/input_file.h).
  const std::string text = a.has("--text")        ? a.require("--text")
                           : a.has("--text-file") ? read_input_file(a.require("--text-file"), InputKind::Text)
                                                  : std::string();
  // An image is read (and refused: FIFO, SVG, not a raster format) before the model is loaded.
  std::optional<RgbImage> image;
  if (auto path = a.get("--image")) image = load_image(*path);

  LoadOptions load;
  if (a.has("--seed")) load.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  Model model = load_model(a.positionals()[0], load);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());

  RunOptions options;
  options.trace.scores = a.has("--scores");
  options.trace.hidden = a.has("--hidden");
  options.trace.value_norms = a.has("--value-norms");
  options.trace.maps = map_storage_arg(a.get("--maps"), model.config());
  if (auto only = a.get("--only-maps")) options.trace.only_maps = only_maps_arg(*only);
  options.threads = static_cast<int>(a.get_int("--threads", 0, 0, 1024));
  options.pad_to = a.get_int("--pad-to", 0, 0, model.config().max_positions);
  std::unique_ptr<Backend> backend = choose_backend(a.get_or("--backend", "cpu"), a.get_or("--device", ""));
  options.backend = backend.get();

  // The run adds the lens and keeps hidden states only with --hidden (TraceOptions::logit_lens).
  options.trace.logit_lens = logit_lens_k(a, model.config());
  // Every flag is checked before the run, so a typo never costs a long forward.
  const int64_t top = a.get_int("--top-k", 3, 1, model.config().vocab_size);
  const AblationSpec ablation = ablation_from_args(a);
  if (image && a.has("--target")) throw AtlasError("--target is the decoder text of a text run; not with --image");
  RunResult result;
  if (image) {
    ImageRun run = run_on_image(model, *image, options);
    std::printf("image: %s, %s\n", printable(a.require("--image")).c_str(), run.description.c_str());
    result = std::move(run.result);
  } else {
    result = model.run(text, a.get_or("--target", ""), options);
  }
  if (!ablation.empty()) print_ablation(model, result, ablation, options);
  std::printf("model: %s\n", printable(model.config().name).c_str());
  print_tokens(result.trace.target_tokens.empty() ? "tokens" : "source tokens",
               result.trace.source_tokens);
  if (!result.trace.target_tokens.empty()) print_tokens("target tokens", result.trace.target_tokens);
  for (const auto& arr : result.trace.arrays)
    std::printf("  %-36s %s\n", arr.name.c_str(), shape_str(arr.tensor.shape).c_str());
  if (const std::string why = untraced_sparse_maps_reason(model.config(), int64_t(result.trace.source_tokens.size()));
      !why.empty())
    std::fprintf(stderr, "note: %s\n", why.c_str());
  // NaN/Inf logits would print as NaN probabilities: say what happened instead.
  const std::vector<std::string> overflow = output_warnings(result);
  for (const auto& w : overflow) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (result.is_logits && overflow.empty()) print_predictions(model, result, size_t(top));
  if (result.is_logits && !overflow.empty())
    std::printf("predictions: none (the logits hold NaN or Inf; see the warning on stderr)\n");
  if (auto dir = a.get("--dump")) {
    write_dump(*dir, model, result);
    std::printf("dumped %zu arrays to %s\n", result.trace.arrays.size(), printable(*dir).c_str());
  }
  return 0;
}

}  // namespace atlas::cli
