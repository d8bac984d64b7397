#pragma once
// The pieces of seed 002's Transformer block that inference and training share, written once
// over an Executor (core/model/executor.h): the norm of the config, the position-wise
// feed-forward network (GLU-gated or not) and the residual sub-layer around either.
#include <string>
#include <utility>

#include "core/config/config.h"
#include "core/model/executor.h"

namespace atlas {

// LayerNorm (prefix.gamma, prefix.beta), RMSNorm (prefix.gamma) or ScaleNorm (prefix.g).
template <Executor E>
typename E::Value apply_norm(E& e, const ModelConfig& c, const typename E::Value& x,
                             const std::string& prefix) {
  if (c.norm == NormKind::LayerNorm)
    return e.layer_norm(x, e.weight(prefix + ".gamma"), e.weight(prefix + ".beta"), c.norm_eps);
  if (c.norm == NormKind::RmsNorm) return e.rms_norm(x, e.weight(prefix + ".gamma"), c.norm_eps);
  return e.scale_norm(x, e.weight(prefix + ".g"), c.norm_eps);
}

// W2 act(W1 x + b1) + b2, or with ffn.gated W2 (act(W1 x + b1) * (W3 x + b3)) + b2 (GLU).
template <Executor E>
typename E::Value feed_forward(E& e, const ModelConfig& c, const typename E::Value& x,
                               const std::string& prefix) {
  typename E::Value h = e.activation(
      e.linear(x, e.weight(prefix + ".w1"), e.optional_weight(prefix + ".b1")), c.activation);
  if (c.ffn.gated)
    h = e.mul(h, e.linear(x, e.weight(prefix + ".w3"), e.optional_weight(prefix + ".b3")));
  return e.linear(h, e.weight(prefix + ".w2"), e.optional_weight(prefix + ".b2"));
}

// x + drop(f(norm(x))) for pre-norm, norm(x + drop(f(x))) for post-norm (seed 002), the norm
// being `norm_prefix`'s.
template <Executor E, class Sublayer>
typename E::Value residual_sublayer(E& e, const ModelConfig& c, const typename E::Value& x,
                                    const std::string& norm_prefix, Sublayer&& f) {
  if (c.norm_position == NormPosition::Pre)
    return e.add(x, e.residual_dropout(f(apply_norm(e, c, x, norm_prefix))));
  return apply_norm(e, c, e.add(x, e.residual_dropout(f(x))), norm_prefix);
}

}  // namespace atlas
