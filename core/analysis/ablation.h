#pragma once
// Ablations at inference: LayerDrop pruning and DropHead applied to a trained model,
// with the change of the output against the full model. Layers are numbered in execution
// order over all stacks (encoder 0..n-1, then decoder n..n+m-1 of an encoder-decoder model).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model/model.h"

namespace atlas {

struct AblationSpec {
  std::vector<int64_t> drop_layers;                        // explicit layer list
  double layerdrop_rate = 0.0;                             // every-other pruning at rate p
  std::vector<std::pair<int64_t, int64_t>> drop_heads;     // (layer, head)
  bool empty() const { return drop_layers.empty() && layerdrop_rate <= 0 && drop_heads.empty(); }
};

// Layers numbered over all stacks (encoder, then decoder), as the ablations count them.
int64_t ablation_layer_count(const ModelConfig& c);
// The global layer of a weight or sub-layer name ("decoder.layer2.self_attn" -> n_encoder + 2);
// -1 for names outside the layers (embeddings, output head).
int64_t global_layer_of(const ModelConfig& c, const std::string& name);

// LayerDrop "every other" pruning (Fan et al., REFERENCES.md): in a stack of n layers, drop
// those at depth d = 1..n with d = 0 mod floor(1/p) (p = 0.5 drops 0-based layers 1, 3, ...).
std::vector<int64_t> layerdrop_every_other(int64_t n_layers, double rate);

// The sorted, de-duplicated layers the spec drops (global numbering); throws on bad indices,
// a rate outside (0, 1], or when every layer of a stack would go.
std::vector<int64_t> ablated_layers(const ModelConfig& c, const AblationSpec& spec);

// The pruned model: dropped layers removed (later layers renumbered, so a post-norm layer is
// skipped, not replaced by its norm) and dropped heads' columns of W^O zeroed in every
// attention sub-layer of that layer, i.e. the head contributes nothing (no rescaling at
// inference).
Model ablated_model(const Model& model, const AblationSpec& spec);

// The arrays compare_ablation adds, named once for it and its readers (the ablation panel).
namespace ablation_arrays {
inline constexpr const char* kKl = "ablation.kl";
inline constexpr const char* kCosine = "ablation.cosine";
inline constexpr const char* kLayers = "ablation.layers";
inline constexpr const char* kHeads = "ablation.heads";
}  // namespace ablation_arrays

// Runs the ablated model on the full run's tokens and adds to `full.trace`:
//   ablation.kl [L]      KL(P_full || P_ablated) of the next-token distributions (logits), or
//   ablation.cosine [L]  cosine of full and ablated final hidden states (no output head),
// plus ablation.layers [n] and ablation.heads [n, 2] (int32) naming what was dropped.
// Returns the per-position values.
std::vector<double> compare_ablation(const Model& model, RunResult& full, const AblationSpec& spec,
                                     const RunOptions& options);

}  // namespace atlas

namespace atlas {
// CLI syntax: "1,3" -> {1, 3}; "0:1,2:3" -> {(0, 1), (2, 3)}. Throws naming `flag` on bad text.
std::vector<int64_t> parse_layer_list(const std::string& text, const std::string& flag);
std::vector<std::pair<int64_t, int64_t>> parse_head_list(const std::string& text, const std::string& flag);
}  // namespace atlas
