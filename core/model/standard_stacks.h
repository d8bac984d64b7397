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
  // A residual sum (sub-layer prefix) and a norm's output (norm prefix, input, output) through
  // the run's hooks (inference; the identity on the tape).
  { e.residual_sum(name, x) } -> std::convertible_to<typename E::Value>;
  { e.norm_output(name, x, x) } -> std::convertible_to<typename E::Value>;
};

// residual_sublayer (transformer_block.h) with the run's residual and norm hooks: the same ops
// in the same order. Pre-norm x + f(norm(x)), the norm's output and the sum hooked; post-norm
// norm(x + f(x)), the sum hooked before the norm reads it, then the norm's output.
template <StackExecutor E, class Sublayer>
typename E::Value hooked_sublayer(E& e, const ModelConfig& c, const typename E::Value& x,
                                  const std::string& sublayer, const std::string& norm, Sublayer&& f) {
  using Value = typename E::Value;
  if (c.norm_position == NormPosition::Pre) {
    const Value n = e.norm_output(norm, x, apply_norm(e, c, x, norm));
    return e.residual_sum(sublayer, e.add(x, e.residual_dropout(f(n))));
  }
  const Value sum = e.residual_sum(sublayer, e.add(x, e.residual_dropout(f(x))));
  return e.norm_output(norm, sum, apply_norm(e, c, sum, norm));
}

// The final norm of a pre-norm stack through the norm hook; a post-norm stack's output as is.
template <StackExecutor E>
typename E::Value stack_final_norm(E& e, const ModelConfig& c, const typename E::Value& x, const std::string& stack) {
  if (c.norm_position != NormPosition::Pre) return x;
  const std::string norm = stack + ".final_norm";
  return e.norm_output(norm, x, apply_norm(e, c, x, norm));
}

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
    x = hooked_sublayer(e, c, x, self.prefix, p + ".attn_norm",
                        [&](const Value& h) { return e.attention(h, h, self); });
    x = e.layer_output(p, input, hooked_sublayer(e, c, x, p + ".ffn", p + ".ffn_norm", [&](const Value& h) {
                         return e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn"));
                       }));
    e.layer_done(p, x);
  }
  return stack_final_norm(e, c, x, "encoder");
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
    x = hooked_sublayer(e, c, x, self.prefix, p + ".self_attn_norm",
                        [&](const Value& h) { return e.attention(h, h, self); });
    if (memory) {
      const AttentionCall cross{p + ".cross_attn", "decoder", "cross_attn", i, false,
                                &memory_valid};
      x = hooked_sublayer(e, c, x, cross.prefix, p + ".cross_attn_norm",
                          [&](const Value& h) { return e.attention(h, *memory, cross); });
    }
    x = e.layer_output(p, input, hooked_sublayer(e, c, x, p + ".ffn", p + ".ffn_norm", [&](const Value& h) {
                         return e.ffn_output(p + ".ffn", feed_forward(e, c, h, p + ".ffn"));
                       }));
    e.layer_done(p, x);
  }
  return stack_final_norm(e, c, x, "decoder");
}

}  // namespace atlas
