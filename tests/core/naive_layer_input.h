#pragma once
// The values v = LN(x) W^V^T + b^V of layer 0's self-attention in a pre-norm, LayerNorm
// decoder, written with plain loops from the parameters and the traced positional encoding:
// an oracle independent of the forward pass for tests that need a head's values.
#include <cmath>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace naive {  // with the other naive oracles (naive_transformer.h)

using atlas::ModelConfig;
using atlas::ParamStore;
using atlas::Tensor;
using atlas::TokenInfo;

// [L, d] row-major, in double.
inline std::vector<double> layer0_values(const ModelConfig& c, const ParamStore& p,
                                         const std::vector<TokenInfo>& tokens, const Tensor& positional) {
  const int64_t L = int64_t(tokens.size()), d = c.d_model;
  const float scale = c.scale_embedding ? std::sqrt(float(d)) : 1.0f;
  const Tensor& E = p.at("embed.tokens");
  const Tensor& g = p.at("decoder.layer0.self_attn_norm.gamma");
  const Tensor& b = p.at("decoder.layer0.self_attn_norm.beta");
  const Tensor& wv = p.at("decoder.layer0.self_attn.wv");
  const Tensor& bv = p.at("decoder.layer0.self_attn.bv");
  std::vector<double> v(static_cast<size_t>(L * d));
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> x(static_cast<size_t>(d));
    double mu = 0, var = 0;
    for (int64_t k = 0; k < d; ++k) {
      x[size_t(k)] = double(E.data[size_t(tokens[size_t(i)].id * d + k)]) * scale + positional.data[size_t(i * d + k)];
      mu += x[size_t(k)] / double(d);
    }
    for (int64_t k = 0; k < d; ++k) var += (x[size_t(k)] - mu) * (x[size_t(k)] - mu) / double(d);
    for (int64_t k = 0; k < d; ++k)
      x[size_t(k)] = (x[size_t(k)] - mu) / std::sqrt(var + c.norm_eps) * g.data[size_t(k)] + b.data[size_t(k)];
    for (int64_t o = 0; o < d; ++o) {
      double s = bv.data[size_t(o)];
      for (int64_t k = 0; k < d; ++k) s += double(wv.data[size_t(o * d + k)]) * x[size_t(k)];
      v[size_t(i * d + o)] = s;
    }
  }
  return v;
}

}  // namespace naive
