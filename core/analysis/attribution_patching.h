#pragma once
// Attribution patching (Nanda 2023, "Attribution patching: activation patching at industrial
// scale"; Kramar et al. 2024, "AtP*"): a first-order estimate of every cell of an activation
// patching grid (patching.h) from one forward and one backward per input. For a site
// activation a and the metric M,
//   denoising: M(corrupted with a_clean) - M(corrupted) ~ (a_clean - a_corr) . dM/da |corrupted run
//   noising:   M(clean with a_corr)      - M(clean)     ~ (a_corr - a_clean) . dM/da |clean run
// summed over the cell's elements (a row for resid/attn/mlp/head-pos, a head's columns of every
// row for head). The result is a PatchResult whose `raw` is the unpatched metric plus the estimate,
// normalised as exact patching (clean 1, corrupted 0), so the two grids compare cell by cell.
//
// Integrated gradients (ig_steps = N > 0): the input embeddings (tokens + positions, the layers'
// input) are interpolated, e(alpha) = e_corr + alpha (e_clean - e_corr), at the N midpoints
// alpha_k = (k + 1/2) / N, and dM/da at every site is averaged over the N runs; the estimate is
// the same difference times that average (the "EAP-IG" form of Hanna et al. 2024). Both
// directions use the same path, so noising is the negative of the denoising sum.
//
// The gradients come from the training tape (core/train/train_model.h) run with weights frozen
// (no parameter gradients), in float or in double. The tape needs float copies of the weights:
// quantized (GGUF) matrices are dequantized when the estimate fits, refused otherwise.
// Definitions and numbers: docs/patching.md, "Attribution patching".
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/analysis/patching.h"

namespace atlas {

// The model's weights as the tape reads them (float or double copies, quantized matrices
// dequantized): converting GPT-2 small's takes about as long as the passes themselves, so a
// caller running several estimates on one model converts once.
struct AttributionWeights;
std::shared_ptr<const AttributionWeights> attribution_weights(const Model& model, bool double_precision);

struct AttributionOptions {
  int64_t ig_steps = 0;            // 0: plain AtP; N > 0: integrated gradients over N interpolations
  bool double_precision = false;   // run the tape in double (tests); float otherwise
  double max_memory = 0;           // bytes the backward may hold; 0 = kMemoryShare of available memory
  const std::atomic<bool>* cancel = nullptr;
  // From attribution_weights(the same model, double_precision); null = converted by the call.
  std::shared_ptr<const AttributionWeights> weights;
};

// What the backward holds: float copies of every weight and the tape's activations (values of
// the two runs and the gradients of one), for `tokens` tokens.
struct AttributionMemory {
  double weights = 0, activations = 0;
  double total() const { return weights + activations; }
};
AttributionMemory estimate_attribution_memory(const Model& model, int64_t tokens, bool double_precision);

// check_patching's refusals, then the tape's: a config without a backward (check_trainable's
// message), a stack without standard layers (Transformer-XL, Universal, reversible), tokens of a
// type other than 0, and a backward whose memory estimate exceeds the limit (the estimate named).
void check_attribution_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                const AttributionOptions& options);

// The estimated grid. `runs` counts the tape passes: one per input (plain AtP: the corrupted
// one's with its backward when denoising, the clean one's when noising), plus N forwards and
// backwards on interpolated inputs (IG).
// progress(done, total) after each pass; throws Cancelled when the flag is set.
PatchResult attribution_patching(const Model& model, const std::vector<TokenInfo>& clean,
                                 const std::vector<TokenInfo>& corrupted, const PatchSpec& spec,
                                 const AttributionOptions& options = {},
                                 const std::function<void(int64_t done, int64_t total)>& progress = {});

// The metric's gradient with respect to the logits' row `position` (-1 = last) of `logits`
// [vocab] (exposed for tests): logit-diff e_a - e_b, prob p_a (e_a - p), loss p - e_a,
// KL(P_clean || P) p - p_clean.
std::vector<double> patch_metric_gradient(const PatchSpec& spec, const std::vector<double>& clean_logits_row,
                                          const std::vector<double>& logits_row);

// Spearman's rank correlation of two equally long lists (ties get their mean rank); NaN when
// either list is constant or shorter than 2.
double spearman_rank_correlation(const std::vector<double>& a, const std::vector<double>& b);
// How many of the k largest |a| are among the k largest |b| (ties broken by index).
int64_t top_k_overlap(const std::vector<double>& a, const std::vector<double>& b, int64_t k);
// The cells' indices ordered by |effect| descending (ties by index), effect = raw - unpatched.
std::vector<int64_t> cells_by_effect(const PatchResult& r);
// raw - the unpatched run's metric, per cell.
std::vector<double> patch_effects(const PatchResult& r);

}  // namespace atlas
