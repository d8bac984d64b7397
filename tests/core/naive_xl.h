#pragma once
// A naive-loop Transformer-XL over the whole text, written from the equation of REFERENCES.md:
// a causal relative model,
//   A_ij = [(q_i + u).k_j + (q_i + v).(W_kR R_{i-j})] / sqrt(d_head),
// which the segment recurrence must reproduce when memory covers the previous segment. Shared
// by tests/core/test_xl.cpp (the engine against it) and tests/core/test_patching_xl.cpp (head
// patching against it edited by hand).
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/config/config.h"
#include "core/model/params.h"
#include "tests/core/naive_transformer.h"

namespace naive {

// A small XL decoder: d 8, 2 heads, 2 layers, bytes vocabulary, no absolute positions.
inline atlas::ModelConfig xl_test_config(atlas::NormPosition np, int64_t segment_length, int64_t mem_len) {
  atlas::ModelConfig c;
  c.name = "xl-test";
  c.architecture = atlas::Architecture::Decoder;
  c.vocab_size = 256;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 12;
  c.n_layers = 2;
  c.max_positions = 1024;
  c.positional = atlas::Positional::None;
  c.scale_embedding = false;
  c.norm_position = np;
  c.init_std = 0.5f;
  c.stack = atlas::XLConfig{};
  c.xl()->segment_length = segment_length;
  c.xl()->mem_len = mem_len;
  return c;
}

// R_dist [d]: [sin(dist w_k) | cos(dist w_k)], w_k = 10000^(-2k/d), k < d/2 (reference layout).
inline std::vector<double> xl_rel_sinusoid(int64_t dist, size_t d) {
  std::vector<double> r(d);
  for (size_t k = 0; k < d / 2; ++k) {
    const double w = std::pow(10000.0, -2.0 * double(k) / double(d));
    r[k] = std::sin(double(dist) * w);
    r[k + d / 2] = std::cos(double(dist) * w);
  }
  return r;
}

struct XlRun {
  Matrix logits;
  std::vector<Matrix> heads;  // per layer, the heads' outputs before W^O
};

// Pre- or post-norm XL over the whole text: query i sees j <= i (and j > i - mem_len with
// same_length), distances clamped as the reference does (only when clamp_len > 0). `edit(l, o)`
// may change layer l's heads' outputs before W^O (a patch by hand).
inline XlRun xl_whole_text(const atlas::ModelConfig& c, const atlas::ParamStore& p, const std::vector<int>& ids,
                           const std::function<void(int64_t, Matrix&)>& edit = {}) {
  const size_t L = ids.size(), d = size_t(c.d_model), H = size_t(c.n_heads), dh = d / H;
  const bool pre = c.norm_position == atlas::NormPosition::Pre;
  auto bias = [&](const std::string& n) { return has(p, n) ? &P(p, n) : nullptr; };
  Matrix x = zeros(L, d);
  for (size_t i = 0; i < L; ++i)
    for (size_t k = 0; k < d; ++k) x[i][k] = P(p, "embed.tokens").data[size_t(ids[i]) * d + k];
  const auto& U = P(p, "xl.u");
  const auto& V = P(p, "xl.v");
  XlRun run;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string pre_l = "decoder.layer" + std::to_string(l), a = pre_l + ".self_attn";
    const Matrix xn = pre ? norm(x, c, p, pre_l + ".self_attn_norm") : x;
    const Matrix q = linear(xn, P(p, a + ".wq"), bias(a + ".bq"));
    const Matrix k = linear(xn, P(p, a + ".wk"), bias(a + ".bk"));
    const Matrix v = linear(xn, P(p, a + ".wv"), bias(a + ".bv"));
    Matrix o = zeros(L, d);
    for (size_t h = 0; h < H; ++h)
      for (size_t i = 0; i < L; ++i) {
        std::vector<double> s(L, 0.0);
        std::vector<bool> ok(L, false);
        double mx = -1e300;
        for (size_t j = 0; j <= i; ++j) {
          if (c.xl()->same_length && int64_t(j) <= int64_t(i) - c.xl()->mem_len) continue;
          ok[j] = true;
          int64_t dist = int64_t(i - j);
          if (c.xl()->clamp_len > 0 && dist > c.xl()->clamp_len) dist = c.xl()->clamp_len;
          const Matrix rk = linear({xl_rel_sinusoid(dist, d)}, P(p, a + ".wr"), nullptr);
          double e = 0;
          for (size_t t = 0; t < dh; ++t) {
            const size_t col = h * dh + t;
            e += (q[i][col] + U.data[h * dh + t]) * k[j][col];
            e += (q[i][col] + V.data[h * dh + t]) * rk[0][col];
          }
          s[j] = e / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (size_t j = 0; j < L; ++j) sum += ok[j] ? std::exp(s[j] - mx) : 0.0;
        for (size_t j = 0; j < L; ++j)
          if (ok[j])
            for (size_t t = 0; t < dh; ++t) o[i][h * dh + t] += std::exp(s[j] - mx) / sum * v[j][h * dh + t];
      }
    if (edit) edit(l, o);
    run.heads.push_back(o);
    const Matrix att = linear(o, P(p, a + ".wo"), bias(a + ".bo"));
    x = pre ? add(x, att) : norm(add(x, att), c, p, pre_l + ".self_attn_norm");
    const Matrix fin = pre ? norm(x, c, p, pre_l + ".ffn_norm") : x;
    const Matrix f = ffn(fin, c, p, pre_l + ".ffn");
    x = pre ? add(x, f) : norm(add(x, f), c, p, pre_l + ".ffn_norm");
  }
  if (pre) x = norm(x, c, p, "decoder.final_norm");
  run.logits = zeros(L, size_t(c.vocab_size));
  for (size_t i = 0; i < L; ++i)
    for (size_t t = 0; t < size_t(c.vocab_size); ++t)
      for (size_t k = 0; k < d; ++k) run.logits[i][t] += x[i][k] * P(p, "embed.tokens").data[t * d + k];
  return run;
}

}  // namespace naive
