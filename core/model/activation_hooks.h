#pragma once
// Edits of activations during a forward pass, for interventions such as ablation sweeps
// (core/analysis/ablation_sweep.h) and activation patching. Each hook sees host tensors: on a
// device backend the activation is downloaded, edited and uploaded again, so hooks cost a
// round trip per call and are meant for analysis runs, not the interactive one.
#include <functional>
#include <string>

#include "core/tensor/tensor.h"

namespace atlas {

struct ActivationHooks {
  // The heads' outputs of an attention sub-layer before the output projection W^O:
  // [Lq, heads * d_head], head h in columns h*d_head .. (h+1)*d_head. `prefix` is the
  // sub-layer's weight prefix ("decoder.layer3.self_attn"). Called for every attention
  // sub-layer of every variant (each Transformer-XL segment, each Universal Transformer step).
  std::function<void(const std::string& prefix, Tensor& heads)> heads;
  // The output [L, d] of one layer of a standard encoder or decoder stack, given the layer's
  // input; `layer` is the layer's weight prefix ("encoder.layer2"). Stacks of their own
  // (Transformer-XL, Universal Transformer, reversible) do not call it.
  std::function<void(const std::string& layer, const Tensor& input, Tensor& output)> layer;
  // The queries, keys and values of an attention sub-layer, as its kernel reads them, per query
  // head: q [Lq, heads * d_head] after the projection W^Q and after positions that act on queries
  // and keys (RoPE); k [Lk, heads * d_head] after W^K and RoPE, v [Lk, heads * d_head] after W^V,
  // both after grouped-query attention's repeat, so head h's columns h*d_head .. (h+1)*d_head are
  // what query head h reads and editing them changes head h only. Called by every sub-layer that
  // goes through core/model/attention_sublayer.h (standard encoder, decoder and cross-attention,
  // GQA/RoPE, Universal Transformer steps, reversible layers, every mechanism kernel: ALiBi, Shaw,
  // sparse, LSH, Performer, adaptive span); Transformer-XL's relative sub-layer does not call it.
  std::function<void(const std::string& prefix, Tensor& q, Tensor& k, Tensor& v)> qkv;
  // The post-softmax attention probabilities [heads, Lq, Lk] of an attention sub-layer, before
  // they weight the values; heads whose rows the hook changes get their outputs recomputed as
  // pattern x v on the host. Called by the softmax kernel of attention_sublayer.h only: mechanism
  // kernels (ALiBi, Shaw, sparse, LSH, Performer, adaptive span, ...) and Transformer-XL do not.
  std::function<void(const std::string& prefix, Tensor& pattern)> pattern;
  // What a sub-layer adds to the residual stream, before the addition (and before a post-norm):
  // an attention sub-layer's output after W^O and b^O [Lq, d] (prefix "decoder.layer3.self_attn";
  // every attention variant, each XL segment and UT step), and a feed-forward output [L, d]
  // (prefix "decoder.layer3.ffn"; every stack: each XL segment, each UT step under
  // "<stack>.universal.ffn", a reversible layer's G half). TransformerLens's hook_attn_out and
  // hook_mlp_out.
  std::function<void(const std::string& prefix, Tensor& out)> sublayer_output;
  // The input of a stack's first layer [L, d] (the token embedding plus absolute positions, as
  // the stack receives it); `stack` "encoder" or "decoder". Transformer-XL: each segment's token
  // embeddings, one call per segment; Universal Transformer: the embeddings before the first
  // step's signal; reversible: before the two streams are made.
  std::function<void(const std::string& stack, Tensor& x)> stack_input;
  // The residual stream [L, d] right after a sub-layer's addition x + f(.), before a post-norm's
  // norm; `prefix` the sub-layer's ("decoder.layer3.self_attn", ".cross_attn", ".ffn"). In a
  // pre-norm layer the sum after the attention sub-layer is the stream the feed-forward reads
  // (TransformerLens's hook_resid_mid) and the one after the feed-forward is the layer's output;
  // in a post-norm layer each sum is its norm's input (TransformerLens's HookedEncoder:
  // hook_resid_mid = resid_pre + attn_out, before ln1). Standard encoder and decoder stacks and
  // the Universal Transformer's shared layer (each step); not Transformer-XL or reversible layers.
  std::function<void(const std::string& prefix, Tensor& x)> residual;
  // A norm's output [L, d] given its input; `norm` the norm's weight prefix
  // ("decoder.layer3.self_attn_norm", ".cross_attn_norm", ".ffn_norm", "decoder.final_norm").
  // Pre-norm: a sub-layer's norm reads the stream before the sub-layer, and the final norm the
  // last layer's output; post-norm: a sub-layer's norm maps the residual sum above to the next
  // stream. TransformerLens's ln1/ln2/ln_final.hook_normalized. Standard stacks, the Universal
  // Transformer (each step) and reversible layers (F's and G's norms, the final norm); not
  // Transformer-XL, nor the embeddings' norm.
  std::function<void(const std::string& norm, const Tensor& input, Tensor& output)> norm;

  explicit operator bool() const {
    return heads || layer || qkv || pattern || sublayer_output || stack_input || residual || norm;
  }
};

}  // namespace atlas
