#pragma once
// An independent, deliberately naive Transformer forward written from the equations of
// seeds 000 and 002 with plain loops over std::vector<double>. It shares nothing with the
// engine but the parameter names, and is the oracle of tests/core/test_model.cpp.
#include <cmath>
#include <functional>
#include <complex>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/params.h"

namespace naive {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

inline Matrix zeros(size_t r, size_t c) { return Matrix(r, std::vector<double>(c, 0.0)); }

inline const atlas::Tensor& P(const atlas::ParamStore& p, const std::string& name) {
  return p.at(name);
}
inline bool has(const atlas::ParamStore& p, const std::string& name) { return p.count(name) > 0; }

// y[i][o] = sum_k x[i][k] w[o][k] + b[o]
inline Matrix linear(const Matrix& x, const atlas::Tensor& w, const atlas::Tensor* b) {
  const size_t out = size_t(w.shape[0]), in = size_t(w.shape[1]);
  Matrix y = zeros(x.size(), out);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t o = 0; o < out; ++o) {
      double s = b ? b->data[o] : 0.0;
      for (size_t k = 0; k < in; ++k) s += x[i][k] * w.data[o * in + k];
      y[i][o] = s;
    }
  return y;
}

inline Matrix norm(const Matrix& x, const atlas::ModelConfig& c, const atlas::ParamStore& p,
                   const std::string& prefix) {
  Matrix y = x;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t d = x[i].size();
    if (c.norm == atlas::NormKind::RmsNorm) {  // x / sqrt(mean x^2 + eps) * g
      double ms = 0;
      for (double v : x[i]) ms += v * v;
      ms /= double(d);
      for (size_t k = 0; k < d; ++k)
        y[i][k] = x[i][k] / std::sqrt(ms + c.norm_eps) * P(p, prefix + ".gamma").data[k];
    } else if (c.norm == atlas::NormKind::LayerNorm) {
      double mean = 0, var = 0;
      for (double v : x[i]) mean += v;
      mean /= double(d);
      for (double v : x[i]) var += (v - mean) * (v - mean);
      var /= double(d);
      for (size_t k = 0; k < d; ++k)
        y[i][k] = (x[i][k] - mean) / std::sqrt(var + c.norm_eps) * P(p, prefix + ".gamma").data[k] +
                  P(p, prefix + ".beta").data[k];
    } else {  // ScaleNorm: g x / max(|x|, eps)
      double n = 0;
      for (double v : x[i]) n += v * v;
      n = std::max(std::sqrt(n), double(c.norm_eps));
      for (size_t k = 0; k < d; ++k) y[i][k] = P(p, prefix + ".g").data[0] * x[i][k] / n;
    }
  }
  return y;
}

// RoFormer (Su et al. 2021) eq. 15 as complex numbers: the pair (x_a, x_b) of row p is
// (x_a + i x_b) e^{i p w_k}, w_k = theta^(-2k/r) (linear scaling divides w_k by its factor).
inline void rotate_rotary(Matrix& x, const atlas::ModelConfig& c, size_t H) {
  const size_t dh = size_t(c.d_head());
  const size_t r = c.rope.rotary_dims > 0 ? size_t(c.rope.rotary_dims) : dh;
  const bool adjacent = c.rope.pairing == atlas::RopePairing::Adjacent;
  for (size_t pos = 0; pos < x.size(); ++pos)
    for (size_t h = 0; h < H; ++h)
      for (size_t k = 0; k < r / 2; ++k) {
        double w = std::pow(double(c.rope.theta), -2.0 * double(k) / double(r));
        if (c.rope.scaling == atlas::RopeScaling::Linear) w /= c.rope.factor;
        const size_t a = h * dh + (adjacent ? 2 * k : k), b = h * dh + (adjacent ? 2 * k + 1 : k + r / 2);
        const std::complex<double> z =
            std::complex<double>(x[pos][a], x[pos][b]) * std::polar(1.0, double(pos) * w);
        x[pos][a] = z.real();
        x[pos][b] = z.imag();
      }
}

struct AttentionOut {
  Matrix out;
  std::vector<Matrix> probs;  // [head][i][j]
};

// A hand edit of an attention sub-layer `pre`'s q, k, v (what = 'q', 'k', 'v': [L, H*dh] after
// the projections and RoPE), head `head`'s probabilities (what = 'p': [Lq, Lk], before they
// weight the values) or its heads' outputs before W^O (what = 'o'), for patching tests; `head`
// is -1 but for 'p'. forward() also calls it with what = 'r' and the layer's prefix
// ("decoder.layer1") on the residual stream [L, d] before each layer.
using HeadEdit = std::function<void(const std::string& pre, char what, int64_t head, Matrix& m)>;

// allowed(i, j) decides the mask; masked logits are -inf (probability exactly 0).
template <class Allowed>
AttentionOut attention(const Matrix& xq, const Matrix& xkv, const atlas::ModelConfig& c,
                       const atlas::ParamStore& p, const std::string& pre, Allowed allowed,
                       const HeadEdit& edit = {}) {
  auto bias = [&](const char* n) { return has(p, pre + n) ? &P(p, pre + n) : nullptr; };
  Matrix q = linear(xq, P(p, pre + ".wq"), bias(".bq"));
  Matrix k = linear(xkv, P(p, pre + ".wk"), bias(".bk"));
  Matrix v = linear(xkv, P(p, pre + ".wv"), bias(".bv"));
  const size_t H = size_t(c.n_heads), dh = size_t(c.d_head()), lq = xq.size(), lk = xkv.size();
  if (c.positional == atlas::Positional::Rotary && !pre.ends_with("cross_attn")) {
    rotate_rotary(q, c, H);
    rotate_rotary(k, c, size_t(c.kv_heads()));
  }
  if (edit) {
    edit(pre, 'q', -1, q);
    edit(pre, 'k', -1, k);
    edit(pre, 'v', -1, v);
  }
  Matrix concat = zeros(lq, H * dh);
  AttentionOut r;
  // Grouped-query attention: head h reads key/value head h / (H / kv_heads).
  const size_t group = H / size_t(c.kv_heads());
  for (size_t h = 0; h < H; ++h) {
    const size_t kvh = h / group;
    Matrix a = zeros(lq, lk);
    for (size_t i = 0; i < lq; ++i) {
      std::vector<double> e(lk, -INFINITY);
      double mx = -INFINITY;
      for (size_t j = 0; j < lk; ++j) {
        if (!allowed(i, j)) continue;
        double s = 0;
        for (size_t t = 0; t < dh; ++t) s += q[i][h * dh + t] * k[j][kvh * dh + t];
        e[j] = s / std::sqrt(double(dh));
        mx = std::max(mx, e[j]);
      }
      double z = 0;
      for (size_t j = 0; j < lk; ++j) z += std::isinf(e[j]) ? 0.0 : std::exp(e[j] - mx);
      for (size_t j = 0; j < lk; ++j) a[i][j] = std::isinf(e[j]) ? 0.0 : std::exp(e[j] - mx) / z;
    }
    if (edit) edit(pre, 'p', int64_t(h), a);
    for (size_t i = 0; i < lq; ++i)
      for (size_t t = 0; t < dh; ++t) {
        double s = 0;
        for (size_t j = 0; j < lk; ++j) s += a[i][j] * v[j][kvh * dh + t];
        concat[i][h * dh + t] = s;
      }
    r.probs.push_back(a);
  }
  if (edit) edit(pre, 'o', -1, concat);
  r.out = linear(concat, P(p, pre + ".wo"), bias(".bo"));
  return r;
}

inline double activation(double x, atlas::FfnActivation a) {
  switch (a) {
    case atlas::FfnActivation::ReLU: return x > 0 ? x : 0;
    case atlas::FfnActivation::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case atlas::FfnActivation::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case atlas::FfnActivation::Silu: return x / (1 + std::exp(-x));
  }
  return 0;
}

inline Matrix ffn(const Matrix& x, const atlas::ModelConfig& c, const atlas::ParamStore& p,
                  const std::string& pre) {
  auto bias = [&](const char* n) { return has(p, pre + n) ? &P(p, pre + n) : nullptr; };
  Matrix h = linear(x, P(p, pre + ".w1"), bias(".b1"));
  for (auto& row : h)
    for (double& v : row) v = activation(v, c.activation);
  if (c.ffn.gated) {  // GLU: act(w1 x) * (w3 x)
    const Matrix up = linear(x, P(p, pre + ".w3"), bias(".b3"));
    for (size_t i = 0; i < h.size(); ++i)
      for (size_t k = 0; k < h[i].size(); ++k) h[i][k] *= up[i][k];
  }
  return linear(h, P(p, pre + ".w2"), bias(".b2"));
}

inline Matrix add(const Matrix& a, const Matrix& b) {
  Matrix c = a;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < a[i].size(); ++k) c[i][k] += b[i][k];
  return c;
}

inline Matrix embed(const std::vector<int>& ids, const atlas::ModelConfig& c,
                    const atlas::ParamStore& p) {
  const size_t d = size_t(c.d_model);
  const atlas::Tensor& E = P(p, "embed.tokens");
  Matrix x = zeros(ids.size(), d);
  for (size_t i = 0; i < ids.size(); ++i) {
    double n = 0;
    for (size_t k = 0; k < d; ++k) n += double(E.data[ids[i] * d + k]) * E.data[ids[i] * d + k];
    n = std::sqrt(n);
    for (size_t k = 0; k < d; ++k) {
      double e = E.data[ids[i] * d + k];
      if (c.fixnorm) e /= std::max(n, 1e-5);
      if (c.scale_embedding) e *= std::sqrt(double(d));
      double pe = 0;
      if (c.positional == atlas::Positional::Learned) {
        pe = P(p, "embed.positions").data[i * d + k];
      } else if (c.positional == atlas::Positional::Sinusoidal) {
        // seed 000: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)
        size_t pair = c.sinusoid_layout == atlas::SinusoidLayout::Interleaved ? k / 2 : k % (d / 2);
        bool is_sin = c.sinusoid_layout == atlas::SinusoidLayout::Interleaved ? k % 2 == 0 : k < d / 2;
        double angle = double(i) / std::pow(10000.0, 2.0 * double(pair) / double(d));
        pe = is_sin ? std::sin(angle) : std::cos(angle);
      }
      x[i][k] = e + pe;
    }
  }
  return x;
}

struct Result {
  Matrix logits;                          // or hidden when there is no output head
  std::vector<std::vector<Matrix>> attn;  // per attention layer in execution order: [head][i][j]
};

template <class F>
Matrix sub(const Matrix& x, const atlas::ModelConfig& c, const atlas::ParamStore& p,
           const std::string& norm_name, F f) {
  if (c.norm_position == atlas::NormPosition::Pre) return add(x, f(norm(x, c, p, norm_name)));
  return norm(add(x, f(x)), c, p, norm_name);
}

inline Result forward(const atlas::ModelConfig& c, const atlas::ParamStore& p,
                      const std::vector<int>& src, const std::vector<int>& tgt, const HeadEdit& edit = {}) {
  Result r;
  auto valid = [&](const std::vector<int>& ids, size_t j) { return c.pad_id < 0 || ids[j] != c.pad_id; };
  Matrix memory, x;
  if (c.has_encoder()) {
    x = embed(src, c, p);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      std::string pre = "encoder.layer" + std::to_string(l);
      if (edit) edit(pre, 'r', -1, x);
      x = sub(x, c, p, pre + ".attn_norm", [&](const Matrix& h) {
        auto a = attention(h, h, c, p, pre + ".attn", [&](size_t, size_t j) { return valid(src, j); }, edit);
        r.attn.push_back(a.probs);
        return a.out;
      });
      x = sub(x, c, p, pre + ".ffn_norm", [&](const Matrix& h) { return ffn(h, c, p, pre + ".ffn"); });
    }
    if (c.norm_position == atlas::NormPosition::Pre) x = norm(x, c, p, "encoder.final_norm");
    memory = x;
  }
  if (c.has_decoder()) {
    const std::vector<int>& ids = c.architecture == atlas::Architecture::Decoder ? src : tgt;
    x = embed(ids, c, p);
    for (int64_t l = 0; l < c.decoder_layers(); ++l) {
      std::string pre = "decoder.layer" + std::to_string(l);
      if (edit) edit(pre, 'r', -1, x);
      x = sub(x, c, p, pre + ".self_attn_norm", [&](const Matrix& h) {
        auto a = attention(h, h, c, p, pre + ".self_attn",
                           [&](size_t i, size_t j) {
                             const size_t w = size_t(c.attention.sliding_window);  // Mistral
                             return j <= i && (w == 0 || i - j < w) && valid(ids, j);
                           }, edit);
        r.attn.push_back(a.probs);
        return a.out;
      });
      if (c.architecture == atlas::Architecture::EncoderDecoder)
        x = sub(x, c, p, pre + ".cross_attn_norm", [&](const Matrix& h) {
          auto a = attention(h, memory, c, p, pre + ".cross_attn",
                             [&](size_t, size_t j) { return valid(src, j); }, edit);
          r.attn.push_back(a.probs);
          return a.out;
        });
      x = sub(x, c, p, pre + ".ffn_norm", [&](const Matrix& h) { return ffn(h, c, p, pre + ".ffn"); });
    }
    if (c.norm_position == atlas::NormPosition::Pre) x = norm(x, c, p, "decoder.final_norm");
  }
  if (c.output == atlas::OutputHead::None) {
    r.logits = x;
    return r;
  }
  atlas::Tensor table = P(p, c.output == atlas::OutputHead::Tied ? "embed.tokens" : "output.weight");
  if (c.fixnorm) {
    const size_t d = size_t(c.d_model);
    for (size_t v = 0; v < size_t(table.shape[0]); ++v) {
      double n = 0;
      for (size_t k = 0; k < d; ++k) n += double(table.data[v * d + k]) * table.data[v * d + k];
      n = std::max(std::sqrt(n), 1e-5);
      for (size_t k = 0; k < d; ++k) table.data[v * d + k] = float(table.data[v * d + k] / n);
    }
  }
  r.logits = linear(x, table, nullptr);
  return r;
}

}  // namespace naive
