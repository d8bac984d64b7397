#pragma once
// The Universal Transformer's steps (equations in universal.cpp), written once over a
// UniversalExecutor for inference (universal.cpp's executor on the Backend) and training (the
// Builder's tape executor, core/train/train_model_impl.h): the token embedding without
// positions; per step n the position + time signal added to the state, the one shared block
// (attention and feed-forward sub-layers under `<stack>.universal`), and with ACT the halting
// unit and the weighted update; then the final norm of a pre-norm stack. The ACT step itself is
// the executor's: the inference backend keeps the halting state on the device (the act_step
// module op), the tape decides on the values and records the weights' gradient (train_act.h).
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/embeddings.h"
#include "core/model/positional.h"
#include "core/model/standard_stacks.h"
#include "core/model/transformer_block.h"

namespace atlas {

// P_pos + P_time(n): the position table `positions` [L, d] plus the time signal of step n, the
// same row for every position.
inline Tensor universal_signal(const Tensor& positions, int64_t n, SinusoidLayout layout) {
  const int64_t L = positions.shape.at(0), d = positions.shape.at(1);
  Tensor s = positions;
  const Tensor time = sinusoid_table(1, d, layout, n);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t k = 0; k < d; ++k) s.data[size_t(i * d + k)] += time.data[size_t(k)];
  return s;
}

// What the Universal Transformer asks of an executor beyond a stack's.
template <class E>
concept UniversalExecutor = StackExecutor<E> &&
    requires(E e, const typename E::Value& x, typename E::ActRun& act, const Tensor& host,
             const std::string& stack, int64_t n, bool last) {
  // The position table added at every step (inference traces it).
  e.trace_position_signal(host);
  // ACT: the run starts from the embedded state; each step takes the halting unit's logits
  // [L, 1] and the block's output [L, d] and says whether any position still runs.
  { e.act_begin(x) } -> std::same_as<typename E::ActRun>;
  { e.act_state(act) } -> std::convertible_to<typename E::Value>;  // the next step's input
  { e.act_step(act, x, x, last) } -> std::convertible_to<bool>;
  { e.act_output(act) } -> std::convertible_to<typename E::Value>;  // y after the last step
  // After step n with its state (inference traces it and reports progress).
  e.universal_step_done(stack, n, x);
};

// ids [L] -> [L, d]; key_valid [L] (1 = a real key) or empty.
template <UniversalExecutor E>
typename E::Value universal_stack(E& e, const ModelConfig& c, const std::vector<int32_t>& ids,
                                  const std::vector<uint8_t>& key_valid) {
  using Value = typename E::Value;
  const UniversalConfig& u = *c.universal();
  const bool decoder = c.architecture == Architecture::Decoder;
  const std::string stack = decoder ? "decoder" : "encoder", pre = stack + ".universal",
                    attn = decoder ? "self_attn" : "attn";
  const Tensor positions = sinusoid_table(static_cast<int64_t>(ids.size()), c.d_model, c.sinusoid_layout);
  // no positions: the signal has them
  Value state = e.stack_input(stack, e.residual_dropout(embed_tokens(e, c, ids)));
  e.trace_position_signal(positions);
  auto signal = [&](int64_t n) { return e.constant(universal_signal(positions, n, c.sinusoid_layout)); };
  auto block = [&](const Value& s, int64_t n) {  // the shared block at step n
    const AttentionCall call{pre + "." + attn, stack, attn, 0, decoder, &key_valid, n};
    const Value x = hooked_sublayer(e, c, s, call.prefix, call.prefix + "_norm",
                                    [&](const Value& h) { return e.attention(h, h, call); });
    return hooked_sublayer(e, c, x, pre + ".ffn", pre + ".ffn_norm", [&](const Value& h) {
      return e.ffn_output(pre + ".ffn", feed_forward(e, c, h, pre + ".ffn"));
    });
  };
  auto finish = [&](const Value& y) { return stack_final_norm(e, c, y, stack); };
  if (!u.act) {  // a fixed number of steps: a deep model with tied layers
    for (int64_t n = 1; n <= u.max_steps; ++n) {
      state = block(e.add(state, signal(n)), n);
      e.universal_step_done(stack, n, state);
    }
    return finish(state);
  }
  typename E::ActRun act = e.act_begin(state);
  for (int64_t n = 1; n <= u.max_steps; ++n) {
    const Value s = e.add(e.act_state(act), signal(n));
    const Value logit = e.linear(s, e.weight(pre + ".halt.w"), e.weight(pre + ".halt.b"));
    const bool running = e.act_step(act, logit, block(s, n), n == u.max_steps);
    e.universal_step_done(stack, n, e.act_state(act));
    if (!running) break;
  }
  return finish(e.act_output(act));
}

}  // namespace atlas
