#pragma once
// TransformerLens hook names (blocks.{l}.attn.hook_pattern, ...) as aliases of the arrays a run
// traced and of the engine's activation hooks (core/model/activation_hooks.h), for notebooks
// written against TransformerLens. Aliases exist for models with one stack of standard layers
// (an encoder or a decoder): blocks.{l} is its layer l. Atlas has no batch axis: an alias names
// TransformerLens's array without its leading [batch] (docs/python.md has the table).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas::python {

// The one stack TransformerLens's blocks.{l} can name, from the model's config and weights.
struct SingleStack {
  std::string stack;      // "encoder" | "decoder"
  std::string attention;  // the self-attention sub-layer's name in a layer: "attn" | "self_attn"
  int64_t layers = 0;
  int64_t heads = 0, kv_heads = 0, d_head = 0;
  std::string layer(int64_t l) const { return stack + ".layer" + std::to_string(l); }
  std::string attention_of(int64_t l) const { return layer(l) + "." + attention; }
};
// nullopt for encoder-decoder models and models whose layers hold no "<stack>.layer0.*.wo".
std::optional<SingleStack> single_stack(const Model& model);

// An array of a trace: its Atlas name, and the shape to view it as (empty: its own), e.g. the
// queries [L, heads * d_head] as hook_q's [L, heads, d_head].
struct TraceAlias {
  std::string array;
  std::vector<int64_t> view_shape;
  std::string traced_with;  // the run option the array needs ("hidden=True"), "" for none
};
// The Atlas array a TransformerLens name stands for; nullopt when `name` is no alias. Throws
// AtlasError for an alias Atlas has no array for (blocks.0.hook_resid_pre, a layer out of range).
std::optional<TraceAlias> tl_trace_alias(const std::string& name, const std::optional<SingleStack>& s);

// Where a hook named from Python runs: the heads of an attention sub-layer ([L, heads * d_head]
// before W^O, ActivationHooks::heads), a layer's output ([L, d], ActivationHooks::layer), an
// attention sub-layer's queries, keys or values per query head ([L, heads * d_head], after RoPE
// and grouped-query attention's repeat, ActivationHooks::qkv) or its pattern ([heads, Lq, Lk],
// ActivationHooks::pattern).
struct HookPoint {
  enum class Kind { Heads, LayerOutput, Q, K, V, Pattern, SublayerOutput, StackInput, Residual, Norm, NormScale } kind = Kind::Heads;
  std::string prefix;  // the sub-layer's or layer's weight prefix the engine passes
  std::vector<int64_t> view_heads;  // hook_z: the columns viewed as [heads, d_head]; empty: as is
};
// Atlas names "<sub-layer>.heads" ("decoder.layer1.self_attn.heads"), "<sub-layer>.q" / ".k" /
// ".v" / ".pattern", "<sub-layer>.out" (an attention sub-layer's output after W^O, or a standard
// layer's feed-forward output: "decoder.layer1.ffn.out"), "<layer>.output" ("decoder.layer1.output")
// and "<stack>.input" ("decoder.input", the first layer's input), the residual sums
// "<layer>.resid_mid" (after the self-attention sub-layer's addition, before a post-norm),
// "<layer>.resid_mid_cross" (after cross-attention's) and "<layer>.resid_post" (after the
// feed-forward's; ActivationHooks::residual), the norms' outputs by their weight prefixes
// ("decoder.layer1.self_attn_norm", ".cross_attn_norm", ".ffn_norm", "decoder.final_norm";
// ActivationHooks::norm) and their divisors "<norm>.scale" ([L, 1], norm_scale.h), and the
// aliases blocks.{l}.hook_resid_mid, blocks.{l}.ln1 / ln2.hook_normalized / hook_scale,
// ln_final.hook_normalized / hook_scale,
// blocks.{l}.hook_attn_out, blocks.{l}.hook_mlp_out, blocks.0.hook_resid_pre (the stack's input),
// blocks.{l}.attn.hook_z, hook_q, hook_k, hook_v (hook_k and hook_v refused for grouped-query
// models, whose TransformerLens arrays hold the shared heads), hook_pattern,
// blocks.{l}.hook_resid_post, blocks.{l}.hook_resid_pre (l >= 1: the output of layer l - 1).
// Throws AtlasError naming the nearest valid name for anything else.
HookPoint hook_point(const std::string& name, const Model& model, const std::optional<SingleStack>& s);
// Every name hook_point accepts for this model (Atlas names, then aliases).
std::vector<std::string> hook_names(const Model& model, const std::optional<SingleStack>& s);
// Every alias tl_trace_alias resolves to an array `has` (a trace's names) holds.
std::vector<std::string> tl_trace_aliases(const std::optional<SingleStack>& s,
                                          const std::vector<std::string>& traced);

// The candidate closest to `name` by edit distance ("" when there are none), for messages.
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace atlas::python
