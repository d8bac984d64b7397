#pragma once
// One attention sub-layer (seed 002 §3.2.2, with the mechanism of each variant), written once
// over an AttentionExecutor for inference (BackendExecutor, core/model/forward_pass.cpp) and
// training (the Builder's TapeExecutor, core/train/train_model_impl.h):
//   the sub-layer begins (its mask, and what the executor keeps of the call);
//   q, k, v with positions and grouped heads (attention_inputs.h);
//   the kernel of the mechanism the one rule attention_mechanism.h picks (its registry entry's,
//   core/model/attention_kernel.h), else the executor's own softmax kernel;
//   the heads' outputs through W^O.
// The kernels are executor operations, as a matrix product is: on the Backend each is the
// variant's op (a module op with a Vulkan kernel and a host reference) and traces its maps; on
// the tape each is the differentiable op with its backward, attention dropout (in the spec) and
// DropHead (the executor's, on every kernel's output). The executors name no mechanism: each
// hands a mechanism's kernel what attention_kernel.h's calls hold.
#include <concepts>

#include "core/config/config.h"
#include "core/model/attention_inputs.h"
#include "core/model/attention_mechanism.h"
#include "core/model/executor.h"
#include "core/model/standard_stacks.h"

namespace atlas {

// What an attention sub-layer asks of an executor beyond the block's ops. `AttentionRun` is the
// executor's record of one call, from begin_attention to finish_attention.
template <class E>
concept AttentionExecutor = Executor<E> &&
    requires(E e, const typename E::Value& x, typename E::Value& edited,
             typename E::AttentionRun& run, const AttentionCall& call,
             const AttentionMechanismModule* m, int heads) {
  { e.begin_attention(call, x, x, m) } -> std::same_as<typename E::AttentionRun>;  // xq, xkv
  // Positions on queries and keys (core/model/qk_positions.h), x itself where none apply.
  { e.qk_positions(run, x, heads) } -> std::convertible_to<typename E::Value>;
  // Keys and values before the grouped-query repeat (inference splices a cached prefix here).
  e.splice_prefix(run, edited, edited);
  // q, k, v: inference traces them when asked and lets RunOptions::hooks.qkv edit them.
  e.inputs_ready(run, edited, edited, edited);
  // The kernels: q [Lq, H*dh], k, v [Lk, H*dh] -> the heads' outputs [Lq, H*dh]: the
  // executor's softmax, or a mechanism's kernel (xq first: the dynamic span reads it).
  { e.softmax_attention(run, x, x, x) } -> std::convertible_to<typename E::Value>;
  { e.mechanism_attention(run, *m, x, x, x, x) } -> std::convertible_to<typename E::Value>;
  // The heads' outputs through W^O `prefix.{wo,bo}`.
  { e.finish_attention(run, x) } -> std::convertible_to<typename E::Value>;
};

// xq [Lq, d], xkv [Lk, d] (the same tensor for self-attention) -> [Lq, d].
template <AttentionExecutor E>
typename E::Value attention_sublayer(E& e, const ModelConfig& c, const typename E::Value& xq,
                                     const typename E::Value& xkv, const AttentionCall& call) {
  using Value = typename E::Value;
  const AttentionMechanismModule* mechanism = attention_mechanism(c, !call.cross());
  typename E::AttentionRun run = e.begin_attention(call, xq, xkv, mechanism);
  AttentionInputs<Value> in = attention_inputs(
      e, c, xq, xkv, call.prefix,
      [&](const Value& x, int heads) { return e.qk_positions(run, x, heads); },
      [&](Value& k, Value& v) { e.splice_prefix(run, k, v); });
  e.inputs_ready(run, in.q, in.k, in.v);
  const Value heads = mechanism ? e.mechanism_attention(run, *mechanism, xq, in.q, in.k, in.v)
                                : e.softmax_attention(run, in.q, in.k, in.v);  // [Lq, H*dv]
  return e.finish_attention(run, heads);
}

}  // namespace atlas
