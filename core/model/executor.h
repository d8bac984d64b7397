#pragma once
// The operations a piece of the forward is written over, so that it is written once for
// inference and for training (docs/ARCHITECTURE.md, "Forward written once"). Two executors
// implement them:
//   BackendExecutor (core/model/backend_executor.h)  Backend ops on device tensors (DTensor),
//                                                     the inference ForwardPass; no dropout
//   TapeExecutor<S> (core/train/train_model_impl.h)   Tape ops on node ids (int), the training
//                                                     forward; dropout drawn from its generator
// A piece written over an Executor (core/model/transformer_block.h) issues the same ops in the
// same order on both, so the training path cannot drift from the inference path there.
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

template <class E>
concept Executor = requires(E e, const typename E::Value& x, const std::string& name, float eps,
                            FfnActivation activation, int64_t n, const std::vector<int32_t>& ids,
                            const Tensor& host) {
  // Parameters by name; an optional one that is absent is a value `linear` reads as "no bias".
  { e.weight(name) } -> std::convertible_to<typename E::Value>;
  { e.optional_weight(name) } -> std::convertible_to<typename E::Value>;
  { e.constant(host) } -> std::convertible_to<typename E::Value>;   // no gradient
  { e.linear(x, x, x) } -> std::convertible_to<typename E::Value>;  // x W^T + b
  { e.embedding(x, ids, eps) } -> std::convertible_to<typename E::Value>;  // rows of x, scaled
  { e.row_normalize(x, eps) } -> std::convertible_to<typename E::Value>;   // unit rows
  { e.add(x, x) } -> std::convertible_to<typename E::Value>;
  { e.mul(x, x) } -> std::convertible_to<typename E::Value>;  // elementwise
  { e.activation(x, activation) } -> std::convertible_to<typename E::Value>;
  { e.layer_norm(x, x, x, eps) } -> std::convertible_to<typename E::Value>;  // gamma, beta
  { e.rms_norm(x, x, eps) } -> std::convertible_to<typename E::Value>;       // gamma
  { e.scale_norm(x, x, eps) } -> std::convertible_to<typename E::Value>;     // g
  // Grouped-query heads repeated n times.
  { e.repeat_heads(x, n, n) } -> std::convertible_to<typename E::Value>;  // groups, d_head
  // The residual dropout of a sub-layer's output (identity at inference).
  { e.residual_dropout(x) } -> std::convertible_to<typename E::Value>;
};

}  // namespace atlas
