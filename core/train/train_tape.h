#pragma once
// A small reverse-mode tape over Eigen matrices: each op computes its value and records a
// closure that, run in reverse order, turns the gradient of its output into gradients of its
// inputs. Templated on the scalar so the same maths runs in float (training) and in double
// (finite-difference checks in tests/core/test_train_grad.cpp).
//
// Values are 2-D row-major matrices [rows, cols]; 1-D parameters ([d]) are one row [1, d].
// Parameters are leaves that refer to the caller's matrix (no copy) and whose gradient is
// accumulated into the caller's gradient store by backward().
#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "core/config/config.h"
#include "core/train/frozen_products.h"
#include "core/tensor/error.h"

namespace atlas::train {

template <class S>
using MatT = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using ParamsT = std::map<std::string, MatT<S>>;  // engine names (params.h), 1-D as [1, n]

// What one multi-head attention call needs besides q, k, v.
template <class S>
struct AttentionSpec {
  int heads = 1;
  S scale = S(1);
  bool causal = false;
  std::vector<uint8_t> key_valid;     // [Lk], empty = all keys valid (padding mask)
  std::vector<S> prob_keep;           // [H*Lq*Lk] attention-dropout multipliers, empty = none
  std::vector<S> head_keep;           // [H] DropHead multipliers, empty = none
  // [H*Lq*Lk] 1 where head h's sparse pattern lets query i see key j (Sparse Transformer,
  // Image Transformer local patterns), empty = every key
  std::vector<uint8_t> head_allowed;
  std::vector<S> score_bias;     // [H*Lq*Lk] added to the scaled scores (LSH: log of a key's count)
  bool self_constant = false;    // LSH: query i's score for key i is self_logit, not q.k
  S self_logit = S(0);
};

// Attention dropout on head h's probabilities [Lq, Lk]: p .* keep with keep the head's block of
// `prob_keep`, or p unchanged when there is none. The variant attention ops (span, Shaw,
// additive, Transformer-XL) apply it to the probabilities and to dL/dp the same way.
template <class S>
MatT<S> with_keep(const MatT<S>& p, const std::vector<S>& prob_keep, int h) {
  if (prob_keep.empty()) return p;
  return p.cwiseProduct(Eigen::Map<const MatT<S>>(prob_keep.data() + h * p.size(), p.rows(), p.cols()));
}

// The tape's softmax of every row of s in place, -inf = a masked key; a row with no key
// becomes zeros (the inference engine's rule). The attention ops of the tape (dense, Shaw,
// additive, Transformer-XL) all form their probabilities with it.
template <class S>
void softmax_rows(MatT<S>& s) {
  const S neg_inf = -std::numeric_limits<S>::infinity();
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const S mx = s.cols() ? s.row(i).maxCoeff() : neg_inf;
    if (mx == neg_inf) { s.row(i).setZero(); continue; }
    s.row(i) = (s.row(i).array() - mx).exp();
    s.row(i) /= s.row(i).sum();
  }
}

// The gradient through softmax rows, P = softmax(S) row by row: dL/dS = P .* (dP - rowsum(dP .* P)).
// Every attention op of the tape (dense, span, Shaw, additive, Transformer-XL) backs through it.
template <class S>
MatT<S> softmax_backward(const MatT<S>& p, const MatT<S>& dp) {
  const auto rows = dp.cwiseProduct(p).rowwise().sum().eval();
  return p.cwiseProduct(MatT<S>(dp.colwise() - rows));
}

template <class S>
class Tape {
 public:
  using M = MatT<S>;

  // --- leaves -------------------------------------------------------------------------
  int constant(M value) { return push(std::move(value)); }
  // A parameter leaf: value read from *ref; its gradient is added to grads[name] on backward.
  int param(const std::string& name, const M& ref) {
    auto it = param_ids_.find(name);
    if (it != param_ids_.end()) return it->second;
    Node n;
    n.ref = &ref;
    n.param_name = name;
    nodes_.push_back(std::move(n));
    const int id = static_cast<int>(nodes_.size()) - 1;
    param_ids_[name] = id;
    return id;
  }

  const M& value(int id) const { return nodes_[id].ref ? *nodes_[id].ref : nodes_[id].value; }

  // Activation recomputation (the reversible layers, core/train/train_model_impl.h): a node's value may
  // be released once every consumer has read it, and set again by a backward closure that
  // rebuilt it, before anything reads its gradient.
  void release_value(int id) { nodes_[id].value = M(); }
  void set_value(int id, M value) { nodes_[id].value = std::move(value); }
  // The node whose backward is running (inside a closure).
  int current() const { return current_; }
  std::vector<std::string> param_names() const {
    std::vector<std::string> names;
    for (const auto& entry : param_ids_) names.push_back(entry.first);
    return names;
  }
  // Bytes held by node values and saved attention probabilities (parameters are references).
  size_t stored_bytes() const {
    size_t bytes = 0;
    for (const Node& n : nodes_) {
      bytes += size_t(n.value.size()) * sizeof(S);
      for (const M& p : n.probs) bytes += size_t(p.size()) * sizeof(S);
    }
    return bytes;
  }
  // Frozen weights (attribution patching, core/analysis/attribution_patching.h): the backward
  // skips the gradients of parameter leaves, the costly half of a linear's backward.
  void freeze_params() { frozen_ = true; }
  bool needs_grad(int id) const { return !(frozen_ && nodes_[id].ref); }
  // Frozen weights, a constant w and a dy with few non-zero rows (attribution patching seeds one
  // row of the logits): dx = dy w for those rows only. Returns false (nothing done) otherwise.
  bool sparse_rows_backward(int x, int w, const M& dy) {
    if (needs_grad(w)) return false;
    std::vector<Eigen::Index> rows;
    for (Eigen::Index i = 0; i < dy.rows(); ++i)
      if (!dy.row(i).isZero(0)) rows.push_back(i);
    if (2 * rows.size() > size_t(dy.rows())) return false;
    M& dx = grad(x);
    for (Eigen::Index i : rows) dx.row(i).noalias() += dy.row(i) * value(w);
    return true;
  }
  M& grad(int id) {
    Node& n = nodes_[id];
    if (n.grad.size() == 0) n.grad = M::Zero(value(id).rows(), value(id).cols());
    return n.grad;
  }

  // a b^T, and g += a b: on the engine's packed kernel when the weights are frozen in float
  // (frozen_products.h), Eigen's product otherwise.
  M product_nt(const M& a, const M& b) const {
    if constexpr (std::is_same_v<S, float>) {
      if (frozen_ && frozen_products_apply(a.rows())) {
        M y(a.rows(), b.rows());
        frozen_product_nt(a.rows(), a.cols(), b.rows(), a.data(), b.data(), y.data());
        return y;
      }
    }
    return a * b.transpose();
  }
  void add_product_nn(const M& a, const M& b, M& g) const {
    if constexpr (std::is_same_v<S, float>) {
      if (frozen_ && frozen_products_apply(a.rows())) {
        frozen_product_add_nn(a.rows(), a.cols(), b.cols(), a.data(), b.data(), g.data());
        return;
      }
    }
    g.noalias() += a * b;
  }

  // --- ops ----------------------------------------------------------------------------
  // y = x W^T + b    x [m, in], W [out, in], b [1, out] or -1
  int linear(int x, int w, int b) {
    M y = product_nt(value(x), value(w));
    if (b >= 0) y.rowwise() += value(b).row(0);
    return record(std::move(y), [=](Tape& t, const M& dy) {
      if (t.frozen_ && t.sparse_rows_backward(x, w, dy)) return;
      t.add_product_nn(dy, t.value(w), t.grad(x));
      if (t.needs_grad(w)) t.grad(w).noalias() += dy.transpose() * t.value(x);
      if (b >= 0 && t.needs_grad(b)) t.grad(b) += dy.colwise().sum();
    });
  }

  // y = a B^T (no bias): the tied/untied output head, logits = h E^T.
  int matmul_nt(int a, int bm) { return linear(a, bm, -1); }

  int add(int a, int b) {
    return record(value(a) + value(b), [=](Tape& t, const M& dy) {
      t.grad(a) += dy;
      t.grad(b) += dy;
    });
  }

  // y = x * mask (elementwise; dropout with the 1/(1-p) scale already in the mask)
  int multiply_constant(int x, M mask) {
    M y = value(x).cwiseProduct(mask);
    return record(std::move(y), [=, mask = std::move(mask)](Tape& t, const M& dy) {
      t.grad(x) += dy.cwiseProduct(mask);
    });
  }

  // LayerNorm over each row: (x - mean) / sqrt(var + eps) * gamma + beta (biased variance).
  int layer_norm(int x, int gamma, int beta, S eps) {
    const M& X = value(x);
    const auto d = X.cols();
    M xhat(X.rows(), d);
    std::vector<S> inv(static_cast<size_t>(X.rows()));
    for (Eigen::Index r = 0; r < X.rows(); ++r) {
      const S mean = X.row(r).mean();
      const S var = (X.row(r).array() - mean).square().mean();
      inv[r] = S(1) / std::sqrt(var + eps);
      xhat.row(r) = (X.row(r).array() - mean) * inv[r];
    }
    M y = (xhat.array().rowwise() * value(gamma).row(0).array()).matrix();
    y.rowwise() += value(beta).row(0);
    return record(std::move(y), [=, xhat = std::move(xhat), inv = std::move(inv)](
                                    Tape& t, const M& dy) {
      t.grad(gamma) += dy.cwiseProduct(xhat).colwise().sum();
      t.grad(beta) += dy.colwise().sum();
      const auto g = t.value(gamma).row(0).array();
      M& dx = t.grad(x);
      for (Eigen::Index r = 0; r < dy.rows(); ++r) {
        const auto dxhat = (dy.row(r).array() * g).eval();
        const S m1 = dxhat.mean();
        const S m2 = (dxhat * xhat.row(r).array()).mean();
        dx.row(r).array() += inv[r] * (dxhat - m1 - xhat.row(r).array() * m2);
      }
    });
  }

  // ScaleNorm (seed 002): g * x / max(|x|, eps); g is [1, 1]. g = -1 -> plain row
  // normalisation (FixNorm of the embedding table).
  int scale_norm(int x, int g, S eps) {
    const M& X = value(x);
    const S gv = g >= 0 ? value(g)(0, 0) : S(1);
    std::vector<S> norm(static_cast<size_t>(X.rows()));
    M y(X.rows(), X.cols());
    for (Eigen::Index r = 0; r < X.rows(); ++r) {
      norm[r] = std::max(X.row(r).norm(), eps);
      y.row(r) = X.row(r) * (gv / norm[r]);
    }
    return record(std::move(y), [=, norm = std::move(norm)](Tape& t, const M& dy) {
      const M& X = t.value(x);
      const S gv = g >= 0 ? t.value(g)(0, 0) : S(1);
      M& dx = t.grad(x);
      S dg = 0;
      for (Eigen::Index r = 0; r < dy.rows(); ++r) {
        const S n = norm[r];
        dg += dy.row(r).dot(X.row(r)) / n;
        if (X.row(r).norm() > eps) {  // d(x/|x|) = (I - x^ x^T) / |x|
          const S proj = dy.row(r).dot(X.row(r)) / (n * n);
          dx.row(r) += (gv / n) * (dy.row(r) - X.row(r) * proj);
        } else {  // clamped: the divisor is the constant eps
          dx.row(r) += dy.row(r) * (gv / n);
        }
      }
      if (g >= 0) t.grad(g)(0, 0) += dg;
    });
  }

  // RMSNorm y = x r g, r = (mean(x^2) + eps)^(-1/2):
  //   dg += dy x r,  dx = r g dy - x r^3 / d * sum_k dy_k g_k x_k
  int rms_norm(int x, int g, S eps) {
    const M& X = value(x);
    const Eigen::Index d = X.cols();
    std::vector<S> r(static_cast<size_t>(X.rows()));
    M y(X.rows(), d);
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      r[i] = S(1) / std::sqrt(X.row(i).squaredNorm() / S(d) + eps);
      y.row(i) = X.row(i).cwiseProduct(value(g).row(0)) * r[i];
    }
    return record(std::move(y), [=, r = std::move(r)](Tape& t, const M& dy) {
      const M& X = t.value(x);
      const auto G = t.value(g).row(0);
      M& dx = t.grad(x);
      M& dg = t.grad(g);
      for (Eigen::Index i = 0; i < dy.rows(); ++i) {
        const S ri = r[i];
        dg.row(0) += dy.row(i).cwiseProduct(X.row(i)) * ri;
        const S s = dy.row(i).cwiseProduct(G).dot(X.row(i));
        dx.row(i) += dy.row(i).cwiseProduct(G) * ri - X.row(i) * (ri * ri * ri * s / S(d));
      }
    });
  }

  // a * b elementwise: da += dy b, db += dy a.
  int multiply(int a, int b) {
    M y = value(a).cwiseProduct(value(b));
    return record(std::move(y), [=](Tape& t, const M& dy) {
      t.grad(a) += dy.cwiseProduct(t.value(b));
      t.grad(b) += dy.cwiseProduct(t.value(a));
    });
  }

  // Grouped-query heads (Backend::repeat_heads): output head h is input head h / groups; the
  // backward sums each group's gradients into its shared head.
  int repeat_heads(int x, int64_t groups, int64_t d_head) {
    const M& X = value(x);
    const Eigen::Index kv = X.cols() / d_head;
    M y(X.rows(), kv * groups * d_head);
    for (Eigen::Index h = 0; h < kv * groups; ++h)
      y.middleCols(h * d_head, d_head) = X.middleCols((h / groups) * d_head, d_head);
    return record(std::move(y), [=](Tape& t, const M& dy) {
      M& dx = t.grad(x);
      for (Eigen::Index h = 0; h < kv * groups; ++h)
        dx.middleCols((h / groups) * d_head, d_head) += dy.middleCols(h * d_head, d_head);
    });
  }

  int activation(int x, FfnActivation kind) {
    const M& X = value(x);
    M y(X.rows(), X.cols());
    M dydx(X.rows(), X.cols());
    const S k = S(0.7978845608028654), c = S(0.044715), r2 = S(0.70710678118654752),
            inv_sqrt_2pi = S(0.3989422804014327);
    for (Eigen::Index i = 0; i < X.size(); ++i) {
      const S v = X.data()[i];
      S f, df;
      switch (kind) {
        case FfnActivation::ReLU: f = v > 0 ? v : S(0); df = v > 0 ? S(1) : S(0); break;
        case FfnActivation::Gelu: {
          const S cdf = S(0.5) * (S(1) + std::erf(v * r2));
          f = v * cdf;
          df = cdf + v * inv_sqrt_2pi * std::exp(-S(0.5) * v * v);
          break;
        }
        case FfnActivation::Silu: {  // x s(x), derivative s(x) (1 + x (1 - s(x)))
          const S sg = S(1) / (S(1) + std::exp(-v));
          f = v * sg;
          df = sg * (S(1) + v * (S(1) - sg));
          break;
        }
        default: {  // GeluTanh
          const S th = std::tanh(k * (v + c * v * v * v));
          f = S(0.5) * v * (S(1) + th);
          df = S(0.5) * (S(1) + th) + S(0.5) * v * (S(1) - th * th) * k * (S(1) + S(3) * c * v * v);
          break;
        }
      }
      y.data()[i] = f;
      dydx.data()[i] = df;
    }
    return record(std::move(y), [=, dydx = std::move(dydx)](Tape& t, const M& dy) {
      t.grad(x) += dy.cwiseProduct(dydx);
    });
  }

  // Rows of `table` picked by ids, times s: the token / learned-position embedding.
  int gather_rows(int table, std::vector<int32_t> ids, S s) {
    const M& T = value(table);
    M y(static_cast<Eigen::Index>(ids.size()), T.cols());
    for (size_t i = 0; i < ids.size(); ++i) y.row(i) = T.row(ids[i]) * s;
    return record(std::move(y), [=, ids = std::move(ids)](Tape& t, const M& dy) {
      if (!t.needs_grad(table)) return;
      M& dt = t.grad(table);
      for (size_t i = 0; i < ids.size(); ++i) dt.row(ids[i]) += dy.row(i) * s;
    });
  }

  // Multi-head scaled dot-product attention, heads side by side in the columns:
  // q [Lq, H*dk], k [Lk, H*dk], v [Lk, H*dv] -> [Lq, H*dv]. Masked scores are -inf; a row
  // with no allowed key outputs zeros (the inference engine's rule). probs(id) keeps the
  // per-head probabilities [H][Lq, Lk] for callers that want to show or penalise them.
  int attention(int q, int k, int v, AttentionSpec<S> spec) {
    const M &Q = value(q), &K = value(k), &V = value(v);
    const int H = spec.heads;
    const Eigen::Index lq = Q.rows(), lk = K.rows(), dk = Q.cols() / H, dv = V.cols() / H;
    std::vector<M> probs(static_cast<size_t>(H));
    M out = M::Zero(lq, H * dv);
    const S neg_inf = -std::numeric_limits<S>::infinity();
    for (int h = 0; h < H; ++h) {
      M s = (Q.middleCols(h * dk, dk) * K.middleCols(h * dk, dk).transpose()) * spec.scale;
      if (spec.self_constant)
        for (Eigen::Index i = 0; i < std::min(lq, lk); ++i) s(i, i) = spec.self_logit;
      if (!spec.score_bias.empty()) s += Eigen::Map<const M>(spec.score_bias.data() + h * lq * lk, lq, lk);
      for (Eigen::Index i = 0; i < lq; ++i)
        for (Eigen::Index j = 0; j < lk; ++j)
          if ((spec.causal && j > i) || (!spec.key_valid.empty() && !spec.key_valid[j]) ||
              (!spec.head_allowed.empty() && !spec.head_allowed[size_t((h * lq + i) * lk + j)]))
            s(i, j) = neg_inf;
      softmax_rows(s);
      M used = s;
      if (!spec.prob_keep.empty())
        used = used.cwiseProduct(Eigen::Map<const M>(spec.prob_keep.data() + h * lq * lk, lq, lk));
      const S hk = spec.head_keep.empty() ? S(1) : spec.head_keep[h];
      out.middleCols(h * dv, dv).noalias() = (used * V.middleCols(h * dv, dv)) * hk;
      probs[h] = std::move(s);
    }
    const int id = record(std::move(out), [=](Tape& t, const M& dout) {
      const M &Q = t.value(q), &K = t.value(k), &V = t.value(v);
      const std::vector<M>& P = t.nodes_[t.current_].probs;
      M& dq = t.grad(q);
      M& dkm = t.grad(k);
      M& dvm = t.grad(v);
      for (int h = 0; h < H; ++h) {
        const S hk = spec.head_keep.empty() ? S(1) : spec.head_keep[h];
        if (hk == S(0)) continue;
        M keep;
        if (!spec.prob_keep.empty())
          keep = Eigen::Map<const M>(spec.prob_keep.data() + h * lq * lk, lq, lk);
        const M used = keep.size() ? M(P[h].cwiseProduct(keep)) : P[h];
        const M dO = dout.middleCols(h * dv, dv) * hk;  // [Lq, dv]
        dvm.middleCols(h * dv, dv).noalias() += used.transpose() * dO;
        M dP = dO * V.middleCols(h * dv, dv).transpose();  // [Lq, Lk]
        if (keep.size()) dP = dP.cwiseProduct(keep);
        M dS = softmax_backward(P[h], dP) * spec.scale;
        if (spec.self_constant)  // a constant score: no gradient to q or k
          for (Eigen::Index i = 0; i < std::min(lq, lk); ++i) dS(i, i) = S(0);
        dq.middleCols(h * dk, dk).noalias() += dS * K.middleCols(h * dk, dk);
        dkm.middleCols(h * dk, dk).noalias() += dS.transpose() * Q.middleCols(h * dk, dk);
      }
    });
    nodes_[id].probs = std::move(probs);
    return id;
  }
  const std::vector<M>& probs(int id) const { return nodes_[id].probs; }

  // y = s * sigmoid(x), with Eigen's vectorised exp (ACT's halting probability, s = 1).
  int scaled_sigmoid(int x, S s) {
    M sig = (S(1) / (S(1) + (-value(x).array()).exp())).matrix();
    M y = sig * s;
    return record(std::move(y), [=, sig = std::move(sig)](Tape& t, const M& dy) {
      t.grad(x).array() += dy.array() * s * sig.array() * (S(1) - sig.array());
    });
  }

  // Appends an op computed elsewhere (core/variants/adaptive_span/train_span.h): its value and its backward.
  int record(M value, std::function<void(Tape&, const M&)> back) {
    const int id = push(std::move(value));
    nodes_[id].back = std::move(back);
    return id;
  }

  // --- backward -----------------------------------------------------------------------
  // Seeds d(loss)/d(output) and runs every recorded closure in reverse; parameter gradients
  // are added into `grads` (created with the parameter's shape when absent).
  void backward(int output, const M& seed, ParamsT<S>& grads) {
    grad(output) += seed;
    for (int i = static_cast<int>(nodes_.size()) - 1; i >= 0; --i) {
      Node& n = nodes_[i];
      if (!n.back || n.grad.size() == 0) continue;
      current_ = i;
      n.back(*this, n.grad);
    }
    for (auto& [name, id] : param_ids_) {
      Node& n = nodes_[id];
      if (n.grad.size() == 0) continue;
      auto it = grads.find(name);
      if (it == grads.end()) grads.emplace(name, n.grad);
      else it->second += n.grad;
    }
  }

 private:
  struct Node {
    M value;
    const M* ref = nullptr;
    M grad;
    std::string param_name;
    std::function<void(Tape&, const M&)> back;
    std::vector<M> probs;  // attention only
  };
  int push(M value) {
    Node n;
    n.value = std::move(value);
    nodes_.push_back(std::move(n));
    return static_cast<int>(nodes_.size()) - 1;
  }
  std::vector<Node> nodes_;
  std::map<std::string, int> param_ids_;
  int current_ = -1;
  bool frozen_ = false;
};

}  // namespace atlas::train
