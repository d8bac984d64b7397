#pragma once
// Activation patching (Heimersheim & Nanda, "How to use and interpret activation patching",
// 2024): a clean and a corrupted input of the same token length; one site's activation of one
// run is put into the other run and a metric of the output is measured.
//   denoising: clean activations into the corrupted run (is this site sufficient?)
//   noising:   corrupted activations into the clean run (is this site necessary?)
// Normalised so that the clean run's metric is 1 and the corrupted run's 0, in both directions.
// Definitions and supported models: docs/patching.md.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

enum class PatchSite {
  Resid,    // the residual stream before layer l at position p (layer 0: the embeddings)
  Attn,     // the attention sub-layer's output of layer l at position p
  Mlp,      // the MLP (feed-forward) output of layer l at position p (pre-norm layers)
  Head,     // head h's output of layer l at every position
  HeadPos,  // head h's output of layer l at position p
  // Head h's input of layer l's attention at every position (RunOptions::hooks.qkv / .pattern):
  Q,        // its queries, after W^Q and RoPE
  K,        // its keys, after W^K and RoPE (grouped-query heads: the key head's copy head h reads)
  V,        // its values
  Pattern,  // its post-softmax probabilities [Lq, Lk] (softmax kernels only)
};
enum class PatchDirection { Denoise, Noise };
enum class PatchMetric {
  LogitDiff,  // logit[token_a] - logit[token_b] at the position
  Prob,       // softmax probability of token_a at the position
  KL,         // KL(P_clean || P_patched) of the next-token distribution at the position
  Loss,       // -log P(token_a) at the position
};

// "resid", "attn", "mlp", "head", "head-pos", "q", "k", "v", "pattern"
const char* patch_site_name(PatchSite s);
const char* patch_direction_name(PatchDirection d);  // "denoise", "noise"
const char* patch_metric_name(PatchMetric m);        // "logit-diff", "prob", "kl", "loss"
// Parse the names above; throw AtlasError naming `flag` and the choices.
PatchSite parse_patch_site(const std::string& s, const std::string& flag);
PatchDirection parse_patch_direction(const std::string& s, const std::string& flag);
PatchMetric parse_patch_metric(const std::string& s, const std::string& flag);

struct PatchSpec {
  PatchSite site = PatchSite::Resid;
  PatchDirection direction = PatchDirection::Denoise;
  PatchMetric metric = PatchMetric::LogitDiff;
  int32_t token_a = -1, token_b = -1;  // vocabulary ids (token_b: logit-diff only)
  int64_t position = -1;               // the output row measured; -1 = the last
  // Only these cells (indices into raw, ascending) are run, the rest left at the unpatched
  // metric; empty = every cell (attribution patching checks its top cells, attribution_patching.h).
  std::vector<int64_t> cells;
};

// One run's input: `source` is the tokens of an encoder-only or decoder-only model, or the
// encoder's input of an encoder-decoder model; `target` is an encoder-decoder model's decoder
// input (BOS first, as Model::tokenize gives it) and empty otherwise.
struct PatchingInput {
  std::vector<TokenInfo> source, target;
};

struct PatchResult {
  PatchSpec spec;
  // [rows, positions] (resid, attn, mlp), [rows, heads] (head, q, k, v, pattern),
  // [rows, heads, positions] (head-pos); row-major. A row is a layer, except for the head sites
  // on an encoder-decoder model, where it is one attention sub-layer (see row_names).
  std::vector<int64_t> shape;
  // Per row (shape[0]): layer sites, the layer ("decoder.layer3"); head sites, the attention
  // sub-layer the row patches ("decoder.layer3.self_attn"). Encoder-decoder models: one row per
  // attention sub-layer in the order the model runs them, every encoder layer's self-attention
  // ("encoder.layer0.attn", ...), then per decoder layer its self-attention and its
  // cross-attention ("decoder.layer0.self_attn", "decoder.layer0.cross_attn", ...); resid (the one layer
  // site there): every encoder layer, then every decoder layer. Positions (head-pos, resid) are
  // source positions on encoder rows and target positions on decoder rows, the axis as long as
  // the longer of the two, cells past a row's own length NaN (never run).
  std::vector<std::string> row_names;
  std::vector<double> raw;         // the metric of each patched run
  std::vector<double> normalised;  // (raw - corrupted) / (clean - corrupted); NaN when clean = corrupted
  double clean = 0.0, corrupted = 0.0;  // the metric of the unpatched runs
  int64_t position = 0;                 // the output row measured
  int64_t runs = 0;                     // forwards run for the grid (cells a causal model skips excluded)
  bool complete = true;                 // false: a cancelled grid, its unfinished cells NaN
};

// The cell of a grid as its index into raw / normalised.
inline int64_t patch_cell(const PatchResult& r, int64_t a, int64_t b, int64_t c = 0) {
  return r.shape.size() == 2 ? a * r.shape[1] + b : (a * r.shape[1] + b) * r.shape[2] + c;
}

// Checks that the spec applies to the model and the two inputs and throws AtlasError naming the
// problem: different lengths (both named, and which side: source or target), an empty input,
// a target on a model without a decoder input or none on an encoder-decoder model, attn and mlp
// sites on an encoder-decoder model, no output head, token ids
// outside the vocabulary, a position outside the input, layer sites (resid, attn, mlp) on a stack
// kind whose layers do not call the layer hook, MLP sites on post-norm layers, q/k/v/pattern sites
// on Transformer-XL (its relative sub-layer has no such hooks), pattern sites on a mechanism kernel.
// The position is a target position on an encoder-decoder model.
void check_patching(const Model& model, const PatchingInput& clean, const PatchingInput& corrupted,
                    const PatchSpec& spec);
// The same for a model with one input per run (no target): refuses an encoder-decoder model,
// naming activation patching with targets as the one analysis that runs on it (path and
// attribution patching, the GUI panel call this form).
void check_patching(const Model& model, const std::vector<TokenInfo>& clean,
                    const std::vector<TokenInfo>& corrupted, const PatchSpec& spec);

// The metric of `logits` [L, vocab] (exposed for tests); `clean_logits` is used by KL only.
double patch_metric(const PatchSpec& spec, const Tensor& clean_logits, const Tensor& logits);

// Runs the grid: one recording run of each input, then one run per cell. `options` gives the
// backend, threads and cancel flag (its trace, hooks and prefix cache are replaced);
// `progress(done, total)` after each run. Throws Cancelled when the flag is set; with `partial`,
// a cancel during the grid first stores there the cells finished so far (the others NaN,
// complete = false), so a GUI keeps them.
PatchResult activation_patching(const Model& model, const PatchingInput& clean, const PatchingInput& corrupted,
                                const PatchSpec& spec, const RunOptions& options,
                                const std::function<void(int64_t done, int64_t total)>& progress = {},
                                PatchResult* partial = nullptr);
// The same for a model with one input per run (encoder-only or decoder-only).
PatchResult activation_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                const RunOptions& options,
                                const std::function<void(int64_t done, int64_t total)>& progress = {},
                                PatchResult* partial = nullptr);

}  // namespace atlas
