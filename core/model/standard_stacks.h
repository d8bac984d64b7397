#pragma once
// The encoder and decoder stacks of seed 002 (and of every model built from them: BERT, GPT-2,
// ViT, the Llama family), written once over a StackExecutor for inference and training: each
// layer a self-attention sub-layer, for a decoder with an encoder's memory a cross-attention
// sub-layer, and a feed-forward sub-layer, each in its residual (pre- or post-norm), then the
// final norm of a pre-norm stack. The attention sub-layer is the executor's `attention`, written
// once in core/model/attention_sublayer.h: on the Backend it runs every variant's mechanism and
// traces the maps, on the tape it records them. The Universal Transformer (core/variants/universal/universal_stack.h) and
// Transformer-XL (core/variants/transformer_xl/xl_stack.h) are written over it too; the
// reversible stack has its own.
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/executor.h"
#include "core/model/transformer_block.h"

namespace atlas {

// One attention sub-layer as a stack calls it.
struct AttentionCall {
  std::string prefix;    // its parameters: "<stack>.layer<i>.<sublayer>"
  std::string stack;     // "encoder" or "decoder"
  std::string sublayer;  // "attn", "self_attn" or "cross_attn"
  int64_t layer = 0;
  bool causal = false;                              // a decoder's self-attention
  const std::vector<uint8_t>* key_valid = nullptr;  // [Lk] 1 = real key; null: every key
  int64_t step = -1;  // the Universal Transformer's step (its one shared layer is layer 0)
  bool cross() const { return sublayer == "cross_attn"; }  // keys from another stack
};

// What a stack asks of an executor beyond the block's ops.
template <class E>
concept StackExecutor = Executor<E> &&
    requires(E e, const typename E::Value& x, const AttentionCall& call, const std::string& name) {
  { e.attention(x, x, call) } -> std::convertible_to<typename E::Value>;  // xq, xkv
  // LayerDrop (training draws it; inference never skips).
  { e.skip_layer() } -> std::convertible_to<bool>;
  // A layer's output through the run's hooks (inference; the identity on the tape).
  { e.layer_output(name, x, x) } -> std::convertible_to<typename E::Value>;  // input, output
  // After a layer (inference traces the hidden state and reports progress).
  e.layer_done(name, x);
  // A feed-forward sub-layer's output and the stack's input through the run's hooks
  // (inference; the identity on the tape).
  { e.ffn_output(name, x) } -> std::convertible_to<typename E::Value>;
  { e.stack_input(name, x) } -> std::convertible_to<typename E::Value>;
};

template <StackExecutor E>
typename E::Value encoder_stack(E& e, const ModelConfig& c, typename E::Value x,
                                const std::vector<uint8_t>& key_valid) {
  using Value = typename E::Value;
  x = e.stack_input("encoder", x);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    if (e.skip_layer()) continue;
    const std::string p = "encoder.layer" + std::to_string(i);
    const AttentionCall self{p + ".attn", "encoder", "attn", i, false, &key_valid};
    const Value input = x;
    x = residual_sublayer(e, c, x, p + ".attn_norm",
                          [&](const Value& h) { return e.attention(h, h, self); });
    x = e.layer_output(p, input, residual_sublayer(e, c, x, p + ".ffn_norm", [&](const Value& h) {
                         return e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn"));
                       }));
    e.layer_done(p, x);
  }
  if (c.norm_position == NormPosition::Pre) x = apply_norm(e, c, x, "encoder.final_norm");
  return x;
}

// `memory`: the encoder's output for cross-attention, or null (a decoder-only model).
template <StackExecutor E>
typename E::Value decoder_stack(E& e, const ModelConfig& c, typename E::Value x,
                                const typename E::Value* memory,
                                const std::vector<uint8_t>& self_valid,
                                const std::vector<uint8_t>& memory_valid) {
  using Value = typename E::Value;
  x = e.stack_input("decoder", x);
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    if (e.skip_layer()) continue;
    const std::string p = "decoder.layer" + std::to_string(i);
    const AttentionCall self{p + ".self_attn", "decoder", "self_attn", i, true, &self_valid};
    const Value input = x;
    x = residual_sublayer(e, c, x, p + ".self_attn_norm",
                          [&](const Value& h) { return e.attention(h, h, self); });
    if (memory) {
      const AttentionCall cross{p + ".cross_attn", "decoder", "cross_attn", i, false,
                                &memory_valid};
      x = residual_sublayer(e, c, x, p + ".cross_attn_norm",
                            [&](const Value& h) { return e.attention(h, *memory, cross); });
    }
    x = e.layer_output(p, input, residual_sublayer(e, c, x, p + ".ffn_norm", [&](const Value& h) {
                         return e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn"));
                       }));
    e.layer_done(p, x);
  }
  if (c.norm_position == NormPosition::Pre) x = apply_norm(e, c, x, "decoder.final_norm");
  return x;
}

}  // namespace atlas
