#pragma once
// Ablation sweeps: every head (or every layer) of a model removed in turn, each time measuring
// how the model's output on one input changes. The researcher's "which heads matter for this
// text" heatmap (TransformerLens-style zero and mean ablation). Formulas: docs/ablation-sweep.md.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

enum class SweepUnit { Heads, Layers };
// Zero: the head's output (or the layer's residual update) is 0, so a zeroed head equals the
// per-spec DropHead ablation and a zeroed layer equals LayerDrop pruning of that layer. Mean:
// it is replaced by its mean over the positions (and Transformer-XL segments / UT steps) of
// the unablated run on the same input.
enum class AblationMode { Zero, Mean };
enum class SweepMetric {
  KL,         // mean over positions of KL(P_clean || P_ablated) of the output distributions
  Loss,       // mean next-token cross-entropy on the input text (causal models)
  LogitDiff,  // logit[token_a] - logit[token_b] at one position
  Cosine,     // mean over positions of cos(h_clean, h_ablated), models without an output head
};

const char* sweep_unit_name(SweepUnit u);      // "heads", "layers"
const char* ablation_mode_name(AblationMode m);  // "zero", "mean"
const char* sweep_metric_name(SweepMetric m);  // "kl", "loss", "logit-diff", "cosine"
// Parse the names above; throw AtlasError naming `flag` and the choices.
SweepUnit parse_sweep_unit(const std::string& s, const std::string& flag);
AblationMode parse_ablation_mode(const std::string& s, const std::string& flag);
SweepMetric parse_sweep_metric(const std::string& s, const std::string& flag);

struct SweepSpec {
  SweepUnit unit = SweepUnit::Heads;
  AblationMode mode = AblationMode::Zero;
  SweepMetric metric = SweepMetric::KL;
  int32_t token_a = -1, token_b = -1;  // LogitDiff: vocabulary ids
  int64_t position = -1;               // LogitDiff: output row; -1 = the last
};

struct SweepResult {
  SweepSpec spec;
  int64_t layers = 0;  // rows: layers numbered over all stacks (ablation.h)
  int64_t heads = 0;   // columns: heads per layer, 1 for a layer sweep
  double clean = 0.0;  // the metric of the unablated run (KL 0, cosine 1)
  std::vector<double> values;  // [layers * heads] the metric of each ablated run
  int64_t position = -1;       // LogitDiff: the row measured
  std::vector<std::string> row_labels;  // per layer: "L3"; an encoder-decoder's "E1", "D0"
  bool complete = true;  // false: a cancelled sweep, its unfinished cells NaN
  // The change a cell's ablation made: values - clean.
  double effect(int64_t layer, int64_t head) const {
    return values[size_t(layer * heads + head)] - clean;
  }
};

// One vocabulary id from what a user typed: "#123" is the id itself, anything else must
// tokenize to exactly one token besides the tokens the tokenizer adds around every text
// ([CLS]/[SEP], BOS). Throws AtlasError naming `flag` and the tokens it got.
int32_t single_token_id(const Model& model, const std::string& text, const std::string& flag);

// Checks that `spec` applies to `model` on this input (an output head for KL / loss /
// logit-diff, a causal model for loss, token ids inside the vocabulary, a position inside the
// output, a standard layer stack for mean layer ablation) and throws AtlasError naming the
// problem and what would work.
void check_sweep(const Model& model, const std::vector<TokenInfo>& source,
                 const std::vector<TokenInfo>& target, const SweepSpec& spec);

// Runs the sweep: one unablated run (recording the means when mode is Mean), then one run per
// cell. `options` gives the backend, threads and cancel flag (its trace and hooks are
// replaced); `progress(done, total)` is called after each run. Throws Cancelled when the flag
// is set, AtlasError on a spec that does not apply; with `partial`, a cancel during the cells
// first stores there the cells finished so far (the others NaN, complete = false), so a GUI
// keeps them.
SweepResult ablation_sweep(const Model& model, const std::vector<TokenInfo>& source,
                           const std::vector<TokenInfo>& target, const SweepSpec& spec,
                           const RunOptions& options,
                           const std::function<void(int64_t done, int64_t total)>& progress = {},
                           SweepResult* partial = nullptr);

// The metric of `ablated` against `clean` outputs of the same input (exposed for tests):
// `tokens` are the output rows' input tokens (the target of an encoder-decoder model).
double sweep_metric(const SweepSpec& spec, const RunResult& clean, const RunResult& ablated,
                    const std::vector<TokenInfo>& tokens);

}  // namespace atlas
