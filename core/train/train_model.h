#pragma once
// The training forward of the vanilla engine (seed 002's Transformer with the composition
// options of DESIGN.md) built on the tape, so it can be differentiated. It mirrors
// ForwardPass (core/model/forward_pass.cpp) op for op and reads the engine's parameter names, so a
// trained ParamStore loads into Model unchanged; tests/core/test_train_model.cpp checks that
// its logits equal Model::run's on the same weights.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/tensor/random.h"
#include "core/train/train_tape.h"

namespace atlas::train {

// One training example, already in token ids. Which sequence carries labels depends on the
// architecture: encoder -> source positions, decoder -> source positions (next-token), and
// encoder-decoder -> target positions. label -1 = no loss at that position.
struct Example {
  std::vector<int32_t> source;
  std::vector<int32_t> target;  // decoder input of an encoder-decoder model (starts with bos)
  std::vector<int32_t> labels;
};

// Regularisers that are on while training and off for evaluation and the equality test.
struct Regularization {
  double dropout = 0.0;            // residual and embedding dropout (seed 002: P_drop)
  double attention_dropout = 0.0;  // on attention probabilities
  double layer_drop = 0.0;         // LayerDrop: skip a whole layer with this probability
  double drop_head = 0.0;          // DropHead: drop whole heads with this probability
};

// Throws AtlasError when the config uses something this trainer has no backward for yet
// (the variants without a training path), naming it.
void check_trainable(const ModelConfig& config);

template <class S>
ParamsT<S> to_train_params(const ParamStore& store);
template <class S>
ParamStore to_param_store(const ParamsT<S>& params, const ModelConfig& config);

// What the forward recorded: the logits, and for the modules' penalties (core/train/
// train_hooks.h) the nodes their tape ops record, read by the module's own hook.
template <class S>
struct ForwardResult {
  int logits = -1;                   // tape id, [L_out, vocab]
  std::vector<int> attention_nodes;  // tape ids of every attention call, in order
  // Adaptive span: the z of each self-attention layer, [1, H] (learned) or [Lq, H] (dynamic)
  // (core/variants/relative_attention/train_relative.h).
  std::vector<int> span_z_nodes;
  // Universal Transformer with ACT, per position t: N(t), and the weight node [L, 1] of its
  // halting step, whose row t is the remainder R(t) (core/variants/universal/train_act.h).
  std::vector<int64_t> act_steps;
  std::vector<int> act_halt_nodes;
  // Attribution patching (core/analysis/attribution_patching.h): per attention call its
  // sub-layer prefix and its output after W^O (both parallel to attention_nodes), and per
  // standard layer (encoder_stack / decoder_stack) its input and output, in order.
  std::vector<std::string> attention_prefixes;
  std::vector<int> attention_output_nodes;
  struct LayerNodes {
    std::string name;  // "decoder.layer3"
    int input = -1, output = -1;
  };
  std::vector<LayerNodes> layer_nodes;
};

// Edits of the forward that training never makes. `embeddings`, when set, receives the
// embeddings' node (tokens and positions, before the first layer; standard stacks only) and
// returns the node the layers read instead (attribution patching's integrated gradients).
template <class S>
struct ForwardEdits {
  std::function<int(Tape<S>&, int embeddings)> embeddings;
  // >= 0: only this row of the logits is computed (the result's logits are [1, vocab]).
  int64_t logits_row = -1;
};

// Records the forward of `ex` on `tape`. `rng` drives dropout, LayerDrop and DropHead and
// may be null when `reg` is all zero.
template <class S>
ForwardResult<S> build_forward(Tape<S>& tape, const ModelConfig& config,
                               const ParamsT<S>& params, const Example& ex,
                               const Regularization& reg, Rng* rng);
template <class S>
ForwardResult<S> build_forward(Tape<S>& tape, const ModelConfig& config,
                               const ParamsT<S>& params, const Example& ex,
                               const Regularization& reg, Rng* rng, const ForwardEdits<S>& edits);

// Label-smoothed cross-entropy over the labelled rows (Szegedy et al., seed 000: eps_ls):
// the target distribution is (1 - eps) on the label plus eps / V spread over all V tokens.
// Returns the summed loss; dlogits (same shape as logits) receives d(sum)/d(logits);
// correct counts argmax hits; count the labelled rows.
template <class S>
S smoothed_cross_entropy(const MatT<S>& logits, const std::vector<int32_t>& labels,
                         double smoothing, MatT<S>* dlogits, int64_t* correct, int64_t* count);

}  // namespace atlas::train
