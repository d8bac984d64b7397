#pragma once
// Naive oracle for GTrXL (Parisotto et al. 2019; seed 001 eqs. 10-14, REFERENCES.md "GTrXL"),
// written from the equations with plain loops over doubles. It shares only parameter names
// with the engine and processes the text segment by segment with an explicit per-layer memory
// (the previous segments' layer inputs, last mem_len rows), the way seed 001 eq. 10 reads:
//   Ybar = RelMHA(LN([M, E])),   Y = g_MHA(E, ReLU(Ybar)),
//   Ebar = FFN(LN(Y)),           E' = g_MLP(Y, ReLU(Ebar))
// (without the reordering: no ReLU, and the model's norm placement around g).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/core/naive_transformer.h"

namespace naive_gtrxl {

using naive::Matrix;

inline double sigm(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// (W v)_o = sum_k W[o][k] v[k] for W stored [out, in].
inline double wv(const atlas::Tensor& w, const std::vector<double>& v, size_t o) {
  double s = 0;
  for (size_t k = 0; k < v.size(); ++k) s += double(w.data[o * v.size() + k]) * v[k];
  return s;
}

// Gate activations of one call, by name ("input", "output", "highway", "r", "z").
using Activations = std::map<std::string, Matrix>;

// g(x, y) per position and unit, straight from the gate equations.
inline Matrix gate(atlas::GateType type, const atlas::ParamStore& p, const std::string& pre,
                   const Matrix& x, const Matrix& y, Activations* acts) {
  const size_t L = x.size(), d = x.empty() ? 0 : x[0].size();
  Matrix out = naive::zeros(L, d);
  auto W = [&](const char* n) -> const atlas::Tensor& { return p.at(pre + n); };
  auto b = [&](size_t o) { return double(p.at(pre + ".b_g").data[o]); };
  auto put = [&](const char* name, size_t i, size_t o, double v) {
    if (!acts) return;
    Matrix& m = (*acts)[name];
    if (m.empty()) m = naive::zeros(L, d);
    m[i][o] = v;
  };
  for (size_t i = 0; i < L; ++i) {
    std::vector<double> r(d);
    if (type == atlas::GateType::Gru)
      for (size_t o = 0; o < d; ++o) r[o] = sigm(wv(W(".w_r"), y[i], o) + wv(W(".u_r"), x[i], o));
    std::vector<double> rx(d);
    for (size_t k = 0; k < d; ++k) rx[k] = r[k] * x[i][k];
    for (size_t o = 0; o < d; ++o) {
      switch (type) {
        case atlas::GateType::None: out[i][o] = x[i][o] + y[i][o]; break;
        case atlas::GateType::Input: {
          const double g = sigm(wv(W(".w_g"), x[i], o));
          put("input", i, o, g);
          out[i][o] = g * x[i][o] + y[i][o];
          break;
        }
        case atlas::GateType::Output: {
          const double g = sigm(wv(W(".w_g"), x[i], o) - b(o));
          put("output", i, o, g);
          out[i][o] = x[i][o] + g * y[i][o];
          break;
        }
        case atlas::GateType::Highway: {
          const double g = sigm(wv(W(".w_g"), x[i], o) + b(o));
          put("highway", i, o, g);
          out[i][o] = g * x[i][o] + (1 - g) * y[i][o];
          break;
        }
        case atlas::GateType::Gru: {
          const double z = sigm(wv(W(".w_z"), y[i], o) + wv(W(".u_z"), x[i], o) - b(o));
          const double h = std::tanh(wv(W(".w_g"), y[i], o) + wv(W(".u_g"), rx, o));
          put("r", i, o, r[o]);
          put("z", i, o, z);
          out[i][o] = (1 - z) * x[i][o] + z * h;
          break;
        }
      }
    }
  }
  return out;
}

// R_dist [d]: [sin(dist w_k) | cos(dist w_k)], w_k = 10000^(-2k/d) (Transformer-XL layout).
inline std::vector<double> rel_sinusoid(int64_t dist, size_t d) {
  std::vector<double> r(d);
  for (size_t k = 0; k < d / 2; ++k) {
    const double w = std::pow(10000.0, -2.0 * double(k) / double(d));
    r[k] = std::sin(double(dist) * w);
    r[k + d / 2] = std::cos(double(dist) * w);
  }
  return r;
}

// Relative attention of one XL layer: queries from xq (the last rows of xkv), keys/values from
// xkv = [memory; segment]; query i sits at key position m + i.
inline Matrix rel_attention(const atlas::ModelConfig& c, const atlas::ParamStore& p,
                            const std::string& a, const Matrix& xq, const Matrix& xkv) {
  auto bias = [&](const std::string& n) { return naive::has(p, n) ? &naive::P(p, n) : nullptr; };
  const size_t d = size_t(c.d_model), H = size_t(c.n_heads), dh = d / H;
  const size_t lq = xq.size(), lk = xkv.size(), m = lk - lq;
  const Matrix q = naive::linear(xq, naive::P(p, a + ".wq"), bias(a + ".bq"));
  const Matrix k = naive::linear(xkv, naive::P(p, a + ".wk"), bias(a + ".bk"));
  const Matrix v = naive::linear(xkv, naive::P(p, a + ".wv"), bias(a + ".bv"));
  const auto& U = naive::P(p, "xl.u");
  const auto& V = naive::P(p, "xl.v");
  Matrix o = naive::zeros(lq, d);
  for (size_t h = 0; h < H; ++h)
    for (size_t i = 0; i < lq; ++i) {
      const int64_t pos = int64_t(m + i);
      std::vector<double> s(lk, 0.0);
      std::vector<bool> ok(lk, false);
      double mx = -1e300;
      for (size_t j = 0; j < lk; ++j) {
        if (int64_t(j) > pos) continue;
        if (c.xl()->same_length && int64_t(j) <= pos - c.xl()->mem_len) continue;
        ok[j] = true;
        int64_t dist = pos - int64_t(j);
        if (c.xl()->clamp_len >= 0) dist = std::min(dist, c.xl()->clamp_len);
        const Matrix rk = naive::linear({rel_sinusoid(dist, d)}, naive::P(p, a + ".wr"), nullptr);
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
      for (size_t j = 0; j < lk; ++j) sum += ok[j] ? std::exp(s[j] - mx) : 0.0;
      for (size_t j = 0; j < lk; ++j)
        if (ok[j])
          for (size_t t = 0; t < dh; ++t) o[i][h * dh + t] += std::exp(s[j] - mx) / sum * v[j][h * dh + t];
    }
  return naive::linear(o, naive::P(p, a + ".wo"), bias(a + ".bo"));
}

struct Result {
  Matrix logits;                           // [L, vocab]
  std::map<std::string, Matrix> gates;     // "seg<s>.layer<i>.<attn|ffn>.gate.<g>" -> [Lq, d]
};

inline Result forward(const atlas::ModelConfig& c, const atlas::ParamStore& p, const std::vector<int>& ids) {
  const size_t d = size_t(c.d_model), S = size_t(c.xl()->segment_length);
  const bool pre = c.norm_position == atlas::NormPosition::Pre;
  const bool relu = c.gating()->identity_map_reorder;
  const atlas::GateType type = c.gating() ? c.gating()->type : atlas::GateType::None;
  std::vector<Matrix> mem(size_t(c.n_layers));
  Result r;
  Matrix all;
  auto combine = [&](const Matrix& x, Matrix y, const std::string& gate_prefix, const std::string& trace) {
    if (relu)
      for (auto& row : y)
        for (double& v : row) v = std::max(v, 0.0);
    Activations acts;
    Matrix g = gate(type, p, gate_prefix, x, y, &acts);
    for (auto& [n, m] : acts) r.gates[trace + ".gate." + n] = m;
    return g;
  };
  for (size_t start = 0, seg = 0; start < ids.size(); start += S, ++seg) {
    const std::vector<int> part(ids.begin() + long(start), ids.begin() + long(std::min(ids.size(), start + S)));
    Matrix x = naive::embed(part, c, p);
    for (int64_t l = 0; l < c.n_layers; ++l) {
      const std::string pl = "decoder.layer" + std::to_string(l);
      const std::string tr = "seg" + std::to_string(seg) + ".layer" + std::to_string(l);
      Matrix cat = mem[size_t(l)];
      cat.insert(cat.end(), x.begin(), x.end());
      Matrix y;
      if (pre) {
        const Matrix ncat = naive::norm(cat, c, p, pl + ".self_attn_norm");
        const Matrix nq(ncat.end() - long(x.size()), ncat.end());
        y = combine(x, rel_attention(c, p, pl + ".self_attn", nq, ncat), pl + ".self_attn_gate", tr + ".attn");
      } else {
        y = naive::norm(combine(x, rel_attention(c, p, pl + ".self_attn", x, cat), pl + ".self_attn_gate", tr + ".attn"),
                        c, p, pl + ".self_attn_norm");
      }
      const size_t keep = std::min(size_t(c.xl()->mem_len), cat.size());
      mem[size_t(l)] = Matrix(cat.end() - long(keep), cat.end());
      const Matrix f = naive::ffn(pre ? naive::norm(y, c, p, pl + ".ffn_norm") : y, c, p, pl + ".ffn");
      x = combine(y, f, pl + ".ffn_gate", tr + ".ffn");
      if (!pre) x = naive::norm(x, c, p, pl + ".ffn_norm");
    }
    all.insert(all.end(), x.begin(), x.end());
  }
  if (pre) all = naive::norm(all, c, p, "decoder.final_norm");
  r.logits = naive::zeros(all.size(), size_t(c.vocab_size));
  const auto& E = naive::P(p, "embed.tokens");
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t t = 0; t < size_t(c.vocab_size); ++t)
      for (size_t k = 0; k < d; ++k) r.logits[i][t] += all[i][k] * E.data[t * d + k];
  return r;
}

}  // namespace naive_gtrxl
