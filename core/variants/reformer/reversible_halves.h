#pragma once
// The two halves of a reversible layer (Reformer, seed 003; REFERENCES.md "Reformer"),
//   Y1 = X1 + F(X2),  Y2 = X2 + G(Y1),   F = drop(Attn(N(.))),  G = drop(FF(N(.))),
// written once over a ReversibleExecutor: inference runs them in its stack
// (lsh_attention.cpp reversible_stack), training in its layer op, whose backward rebuilds the
// layer's input from its output and runs the halves again for the gradients
// (core/train/train_model_impl.h). That layer op, which keeps no activations, is why the two
// stack loops stay apart; what the halves compute is this file.
#include <concepts>
#include <functional>
#include <string>

#include "core/config/config.h"
#include "core/model/standard_stacks.h"
#include "core/model/transformer_block.h"

namespace atlas {

// What a reversible layer asks of an executor beyond a stack's.
template <class E>
concept ReversibleExecutor = StackExecutor<E> &&
    requires(E e, const typename E::Value& x, int64_t chunks,
             const std::function<typename E::Value(const typename E::Value&)>& f) {
  // f over the rows of x in `chunks` parts (Reformer's chunked feed-forward: the same rows,
  // lower peak memory); the tape runs it whole.
  { e.in_row_chunks(x, chunks, f) } -> std::convertible_to<typename E::Value>;
};

// F(x) = drop(Attn(N(x))), the attention half; `call.prefix` names the sub-layer, its norm is
// `<prefix>_norm` (its output through the run's norm hook).
template <ReversibleExecutor E>
typename E::Value reversible_attention_half(E& e, const ModelConfig& c, const typename E::Value& x,
                                            const AttentionCall& call) {
  const std::string norm = call.prefix + "_norm";
  const typename E::Value n = e.norm_output(norm, x, apply_norm(e, c, x, norm));
  return e.residual_dropout(e.attention(n, n, call));
}

// G(x) = drop(FF(N(x))), the feed-forward half of layer `layer` ("encoder.layer2"); the norm's
// and the feed-forward's outputs through the run's hooks.
template <ReversibleExecutor E>
typename E::Value reversible_ffn_half(E& e, const ModelConfig& c, const typename E::Value& x,
                                      const std::string& layer) {
  using Value = typename E::Value;
  const std::string norm = layer + ".ffn_norm";
  const Value n = e.norm_output(norm, x, apply_norm(e, c, x, norm));
  const std::function<Value(const Value&)> ffn = [&](const Value& rows) {
    return feed_forward(e, c, rows, layer + ".ffn");
  };
  return e.residual_dropout(e.ffn_output(layer + ".ffn", e.in_row_chunks(n, c.reversible()->ff_chunks, ffn)));
}

}  // namespace atlas
