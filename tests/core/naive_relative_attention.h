#pragma once
// Naive oracle for the attention variants, written from the equations with plain
// loops over doubles (shares only parameter names with the engine):
//   Shaw (seed 001 eqs. 2-4): e_ij = q_i . (k_j + a^K_r) / sqrt(d), r = clip(j - i, -k, k) + k,
//                             z_i = sum_j alpha_ij (v_j + a^V_r)
//   Adaptive span (seed 000): a_ij = m(x) exp(e_ij) / sum_r m(x_r) exp(e_ir),
//                             m(x) = clamp((R + z - x) / R, 0, 1), x = |i - j|, 0 beyond S;
//                             "after": p = softmax(e), a = p m / (sum p m + 1e-8);
//                             dynamic z_t = S sigmoid(v_h . x_t + b_h).
// Reuses the vanilla pieces (embed, norm, ffn, sub-layers) of naive_transformer.h unchanged.
// Encoder-only and decoder-only models.
#include <algorithm>

#include "tests/core/naive_transformer.h"

namespace naive_i {

using naive::Matrix;

inline naive::AttentionOut attention(const Matrix& x, const atlas::ModelConfig& c,
                                     const atlas::ParamStore& p, const std::string& pre,
                                     bool causal) {
  auto bias = [&](const char* n) { return naive::has(p, pre + n) ? &naive::P(p, pre + n) : nullptr; };
  Matrix q = naive::linear(x, naive::P(p, pre + ".wq"), bias(".bq"));
  Matrix k = naive::linear(x, naive::P(p, pre + ".wk"), bias(".bk"));
  Matrix v = naive::linear(x, naive::P(p, pre + ".wv"), bias(".bv"));
  const size_t H = size_t(c.n_heads), dh = size_t(c.d_head()), L = x.size(), d = size_t(c.d_model);
  const long kd = c.shaw() ? long(c.shaw()->max_distance) : 0;
  const bool span = c.adaptive_span() != nullptr;
  const atlas::AdaptiveSpanConfig sp = span ? *c.adaptive_span() : atlas::AdaptiveSpanConfig{};
  Matrix concat = naive::zeros(L, H * dh);
  naive::AttentionOut r;
  for (size_t h = 0; h < H; ++h) {
    Matrix a = naive::zeros(L, L);
    for (size_t i = 0; i < L; ++i) {
      double z = 0;
      if (span) {
        if (sp.dynamic) {
          double s = p.at(pre + ".span_b").data[h];
          for (size_t t = 0; t < d; ++t) s += p.at(pre + ".span_v").data[h * d + t] * x[i][t];
          z = double(sp.max_span) / (1.0 + std::exp(-s));
        } else {
          z = p.at(pre + ".span_z").data[h];
        }
      }
      std::vector<double> e(L, 0.0), m(L, 0.0);
      for (size_t j = 0; j < L; ++j) {
        if (causal && j > i) continue;
        const long rel = std::clamp(long(j) - long(i), -kd, kd) + kd;
        double s = 0;
        for (size_t t = 0; t < dh; ++t) {
          double key = k[j][h * dh + t];
          if (c.shaw()) key += p.at(pre + ".rel_k").data[size_t(rel) * dh + t];
          s += q[i][h * dh + t] * key;
        }
        e[j] = s / std::sqrt(double(dh));
        m[j] = 1.0;
        if (span) {
          const double dist = std::abs(double(i) - double(j));
          // The reference convention measures the ramp one step farther (x - 1).
          const double x = dist - (sp.distance == atlas::SpanDistance::Reference ? 1.0 : 0.0);
          m[j] = dist > double(sp.max_span)
                     ? 0.0
                     : std::clamp((double(sp.ramp) + z - x) / double(sp.ramp), 0.0, 1.0);
        }
      }
      const bool after = span && sp.mode == atlas::SpanMaskMode::After;
      double mx = -INFINITY;
      for (size_t j = 0; j < L; ++j)
        if (!(causal && j > i) && (after || m[j] > 0)) mx = std::max(mx, e[j]);
      double zsum = 0;
      for (size_t j = 0; j < L; ++j)
        if (!(causal && j > i)) zsum += (after ? 1.0 : m[j]) * std::exp(e[j] - mx);
      double msum = 0;
      for (size_t j = 0; j < L; ++j) {
        if (causal && j > i) continue;
        double w = (after ? 1.0 : m[j]) * std::exp(e[j] - mx) / zsum;
        if (after) w *= m[j];
        a[i][j] = w;
        msum += w;
      }
      if (after)
        for (size_t j = 0; j < L; ++j) a[i][j] /= (msum + 1e-8);
      for (size_t t = 0; t < dh; ++t) {
        double s = 0;
        for (size_t j = 0; j < L; ++j) {
          if (a[i][j] == 0) continue;
          double val = v[j][h * dh + t];
          if (c.shaw()) {
            const long rel = std::clamp(long(j) - long(i), -kd, kd) + kd;
            val += p.at(pre + ".rel_v").data[size_t(rel) * dh + t];
          }
          s += a[i][j] * val;
        }
        concat[i][h * dh + t] = s;
      }
    }
    r.probs.push_back(a);
  }
  r.out = naive::linear(concat, naive::P(p, pre + ".wo"), bias(".bo"));
  return r;
}

// Encoder-only or decoder-only model with the variant self-attention.
inline naive::Result forward(const atlas::ModelConfig& c, const atlas::ParamStore& p,
                             const std::vector<int>& ids) {
  naive::Result r;
  const bool dec = c.architecture == atlas::Architecture::Decoder;
  const std::string stack = dec ? "decoder" : "encoder";
  Matrix x = naive::embed(ids, c, p);
  const int64_t layers = dec ? c.decoder_layers() : c.n_layers;
  for (int64_t l = 0; l < layers; ++l) {
    const std::string pre = stack + ".layer" + std::to_string(l);
    const std::string an = dec ? ".self_attn" : ".attn";
    x = naive::sub(x, c, p, pre + an + "_norm", [&](const Matrix& h) {
      auto a = attention(h, c, p, pre + an, dec);
      r.attn.push_back(a.probs);
      return a.out;
    });
    x = naive::sub(x, c, p, pre + ".ffn_norm", [&](const Matrix& h) { return naive::ffn(h, c, p, pre + ".ffn"); });
  }
  if (c.norm_position == atlas::NormPosition::Pre) x = naive::norm(x, c, p, stack + ".final_norm");
  r.logits = c.output == atlas::OutputHead::None ? x : naive::linear(x, naive::P(p, "embed.tokens"), nullptr);
  return r;
}

}  // namespace naive_i
