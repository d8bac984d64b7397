#pragma once
// A stack kind (core/config/stack_kind.h: the Universal Transformer, Transformer-XL / GTrXL,
// Reformer's reversible stack, the recurrent seq2seq, the NTM, SAGAN, SNAIL) as the centre sees
// it: its parameters, its lines in `atlas info`, what it changes in the cost and memory
// estimates and in on-demand maps, which loop runs it and what training refuses. A kind brings
// its entry by a file stack_kind.cpp in its folder (core/variants/<m>/) defining
//   std::vector<const StackKindModule*> atlas::variants::<m>_stack_kinds();
// which cmake/module_registry.cmake lists, so params.cpp, estimate.cpp, memory_budget.cpp,
// attention_on_demand.cpp, variant_ops.cpp, model.cpp and check_trainable name no kind. The
// standard stacks (StandardStack) have no entry: stack_kind_module returns nullptr for them.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/model/stack_route.h"

namespace atlas {

class ForwardPass;
struct RunOptions;
struct RunResult;
struct TokenInfo;

// The arrays of a host model's alignment that score comparison (core/analysis/score_compare.cpp)
// scores again: the traced map, the states that act as queries and keys (one [rows, d] matrix
// each, no head axis), and the prefix of the model's score weights.
struct ScoredAlignment {
  std::string attention, queries, keys, weight_prefix;
};

// A whole model of its own that replaces the Transformer stacks and runs on the host.
struct HostModelKind {
  // All of its parameters (the Transformer's embeddings and layers do not apply).
  std::vector<ParamSpec> (*param_specs)(const ModelConfig& c) = nullptr;
  // Its forward (`target` is empty unless it is an encoder-decoder).
  RunResult (*forward)(const ModelConfig& c, const ParamStore& params,
                       const std::vector<TokenInfo>& source,
                       const std::vector<TokenInfo>& target, const RunOptions& options) = nullptr;
  const char* untrainable = nullptr;  // what check_trainable names when it refuses the model
  // Its alignment scored by a score function (null: none; the seq2seq's).
  ScoredAlignment (*scored_alignment)(const ModelConfig& c) = nullptr;
};

// An entry is written with designated initializers; what it leaves out keeps the standard
// stacks' behaviour.
struct StackKindModule {
  const char* name = nullptr;                       // the kind's name (stack_kind_name)
  bool (*used_by)(const ModelConfig& c) = nullptr;  // whether a config's stack is of this kind
  const HostModelKind* host = nullptr;              // null: the kind runs Transformer layers
  // The loop a forward runs (stack_route.h); has_route false: the standard stacks' loop by
  // architecture (the reversible stack: plain or reversible per layer inside it).
  bool has_route = false;
  StackRoute route = StackRoute::Encoder;
  // `atlas info` lines right after "architecture:" (null: none).
  void (*describe_head)(const ModelConfig& c, std::ostream& s) = nullptr;
  // `atlas info` lines: a host model's after the score function's, the whole rest; a Transformer
  // kind's before "output:" (null: none).
  void (*describe_tail)(const ModelConfig& c, std::ostream& s) = nullptr;
  // Transformer kinds: parameters after the output head's (null: none).
  void (*append_param_specs)(std::vector<ParamSpec>& specs, const ModelConfig& c) = nullptr;
  // Floating-point operations of a forward over L positions beyond the standard layers' (null:
  // none).
  double (*extra_flops)(const ModelConfig& c, double L) = nullptr;
  // The layer rows the encoder and the decoder trace when not their layer counts (a Universal
  // Transformer's steps of its one block; null: the layer counts).
  int64_t (*traced_depth)(const ModelConfig& c) = nullptr;
  // The layers a forward over source_len positions runs (null: the stacks' layers).
  int64_t (*forward_layers)(const ModelConfig& c, int64_t source_len) = nullptr;
  // Key positions per query of one traced self-attention map over L positions (null: L).
  double (*keys_per_query)(const ModelConfig& c, double L) = nullptr;
  // Whether its attention maps can be left to be computed on demand (attention_on_demand.h).
  bool maps_on_demand = true;
  // Whether it runs its own attention layers, so that no mechanism's backend op applies.
  bool own_attention = false;
  // Analysis (core/analysis): the name of its one block shared by every step, whose parameters
  // are "<stack>.<shared_block>.*" and whose states are traced per step as
  // "<stack>.step<n>.hidden" (null: a block per layer, "<stack>.layer<i>.*").
  const char* shared_block = nullptr;
  // Whether its layers form a standard layer stack, whose whole layers can be mean-ablated.
  bool layer_stack = true;
  // Reversible residual layers in the standard route, Y1 = X1 + F(X2), Y2 = X2 + G(Y1)
  // (Reformer): the encoder and a decoder without cross-attention run them, on the backend by
  // this function (entry (x, x), exit the mean of the streams and the final norm; null: the
  // standard blocks) and on the tape by the training forward's reversible layer op (it keeps no
  // activations and rebuilds its input in its backward, so it is the tape's own).
  DTensor (*reversible_layers)(ForwardPass& pass, DTensor x, const std::string& stack,
                               int64_t layers, const AttentionMask& mask,
                               const std::string& attn_name) = nullptr;
  // Why the logit lens refuses it (null: it does not).
  const char* no_logit_lens = nullptr;
};

// The entry of a config's stack kind (nullptr: the standard stacks).
const StackKindModule* stack_kind_module(const ModelConfig& c);
// The entry's host model (nullptr: Transformer layers).
const HostModelKind* host_model_kind(const ModelConfig& c);

// The name of a config's block shared by every step ("universal"), or nullptr.
const char* shared_block_of(const ModelConfig& c);
// Whether a config's layers form a standard layer stack (the standard stacks, the host models).
bool has_layer_stack(const ModelConfig& c);
// Whether a config's stack kind runs reversible layers (StackKindModule::reversible_layers).
bool has_reversible_layers(const ModelConfig& c);

// Every kind's entry (generated from the folders of core/variants/).
std::vector<const StackKindModule*> generated_variant_stack_kinds();

}  // namespace atlas
