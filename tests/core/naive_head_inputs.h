#pragma once
// A naive forward in double (plain loops, the equations of tests/core/naive_transformer.h) of a
// single-stack model whose attention's inputs can be read and edited per layer: the queries,
// keys and values per query head (q and k after RoPE; keys and values of grouped-query heads
// repeated for each query head, as the engine's hooks see them), each head's pattern
// (post-softmax probabilities) and the heads' outputs before W^O. The oracle of the q/k/v/pattern
// patching sites and of path patching (tests/core/test_patching_inputs.cpp, test_path_patching.cpp).
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "tests/core/naive_transformer.h"

namespace naive_inputs {

using naive::Matrix;

struct Edits {
  // q, k, v [L][H*dh] of layer l, per query head.
  std::function<void(int64_t l, Matrix& q, Matrix& k, Matrix& v)> qkv;
  // Head h's probabilities [Lq][Lk] of layer l (masked keys 0).
  std::function<void(int64_t l, int64_t h, Matrix& p)> pattern;
  // The heads' outputs [L][H*dh] of layer l before W^O.
  std::function<void(int64_t l, Matrix& heads)> heads;
};

struct Run {
  Matrix logits;
  std::vector<std::array<Matrix, 3>> qkv;     // per layer, as used (after edits)
  std::vector<std::vector<Matrix>> pattern;   // per layer, per head
  std::vector<Matrix> heads;                  // per layer, as used
};

inline Run forward(const atlas::ModelConfig& c, const atlas::ParamStore& p, const std::vector<atlas::TokenInfo>& tokens,
                   const Edits& edits = {}) {
  using namespace atlas;
  std::vector<int> ids;
  for (const TokenInfo& t : tokens) ids.push_back(t.id);
  const bool encoder = c.architecture == Architecture::Encoder;
  const std::string stack = encoder ? "encoder" : "decoder";
  const size_t H = size_t(c.n_heads), dh = size_t(c.d_head()), group = H / size_t(c.kv_heads());
  Run r;
  Matrix x = naive::embed(ids, c, p);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string pre = stack + ".layer" + std::to_string(l);
    const std::string attn = pre + (encoder ? ".attn" : ".self_attn");
    auto bias = [&](const char* n) { return naive::has(p, attn + n) ? &naive::P(p, attn + n) : nullptr; };
    x = naive::sub(x, c, p, attn + "_norm", [&](const Matrix& xn) {
      const size_t L = xn.size();
      Matrix q = naive::linear(xn, naive::P(p, attn + ".wq"), bias(".bq"));
      Matrix kg = naive::linear(xn, naive::P(p, attn + ".wk"), bias(".bk"));
      Matrix vg = naive::linear(xn, naive::P(p, attn + ".wv"), bias(".bv"));
      if (c.positional == Positional::Rotary) {
        naive::rotate_rotary(q, c, H);
        naive::rotate_rotary(kg, c, size_t(c.kv_heads()));
      }
      Matrix k = naive::zeros(L, H * dh), v = naive::zeros(L, H * dh);  // repeated per query head
      for (size_t j = 0; j < L; ++j)
        for (size_t h = 0; h < H; ++h)
          for (size_t t = 0; t < dh; ++t) {
            k[j][h * dh + t] = kg[j][(h / group) * dh + t];
            v[j][h * dh + t] = vg[j][(h / group) * dh + t];
          }
      if (edits.qkv) edits.qkv(l, q, k, v);
      r.qkv.push_back({q, k, v});
      Matrix out = naive::zeros(L, H * dh);
      r.pattern.emplace_back();
      for (size_t h = 0; h < H; ++h) {
        Matrix pat = naive::zeros(L, L);
        for (size_t i = 0; i < L; ++i) {
          const size_t last = encoder ? L - 1 : i;
          double mx = -1e300, z = 0;
          for (size_t j = 0; j <= last; ++j) {
            double dot = 0;
            for (size_t t = 0; t < dh; ++t) dot += q[i][h * dh + t] * k[j][h * dh + t];
            pat[i][j] = dot / std::sqrt(double(dh));
            mx = std::max(mx, pat[i][j]);
          }
          for (size_t j = 0; j <= last; ++j) z += (pat[i][j] = std::exp(pat[i][j] - mx));
          for (size_t j = 0; j <= last; ++j) pat[i][j] /= z;
        }
        if (edits.pattern) edits.pattern(l, int64_t(h), pat);
        for (size_t i = 0; i < L; ++i)
          for (size_t t = 0; t < dh; ++t) {
            double acc = 0;
            for (size_t j = 0; j < L; ++j) acc += pat[i][j] * v[j][h * dh + t];
            out[i][h * dh + t] = acc;
          }
        r.pattern.back().push_back(pat);
      }
      if (edits.heads) edits.heads(l, out);
      r.heads.push_back(out);
      return naive::linear(out, naive::P(p, attn + ".wo"), bias(".bo"));
    });
    x = naive::sub(x, c, p, pre + ".ffn_norm", [&](const Matrix& h) { return naive::ffn(h, c, p, pre + ".ffn"); });
  }
  if (c.norm_position == NormPosition::Pre) x = naive::norm(x, c, p, stack + ".final_norm");
  r.logits = naive::linear(x, naive::P(p, c.output == OutputHead::Tied ? "embed.tokens" : "output.weight"), nullptr);
  return r;
}

inline atlas::Tensor as_tensor(const Matrix& m) {
  atlas::Tensor t({int64_t(m.size()), int64_t(m[0].size())});
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) t.data[i * m[i].size() + k] = float(m[i][k]);
  return t;
}

// Head h's columns of `to` set to those of `from`.
inline void copy_head(Matrix& to, const Matrix& from, int64_t h, int64_t dh) {
  for (size_t i = 0; i < to.size(); ++i)
    for (int64_t t = h * dh; t < (h + 1) * dh; ++t) to[i][size_t(t)] = from[i][size_t(t)];
}

}  // namespace naive_inputs
