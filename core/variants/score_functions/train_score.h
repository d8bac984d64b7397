#pragma once
// Seed 004's score functions on the tape (the inference version is core/variants/score_functions/score_functions.cpp).
// Queries, keys and values hold the heads side by side ([L, H*dh]); the score weights are the
// engine's [H, ...] tensors, one row per head on the tape ([H, rows*cols], row-major).
//   dot       s_ij = q_i . k_j                 -> the tape's attention with scale 1
//   general   s_ij = q_i W_h k_j^T             -> q' = q W_h per head (head_matmul), then dot
//   cosine    s_ij = beta q_i.k_j / (|q_i||k_j|) -> unit rows per head (head_unit_rows), scale beta
//   location  s_ij = q_i . W_h[j]               -> keys are W_h's first Lk rows (head_key_rows)
//   additive  s_ij = v_h . tanh(W1_h q_i + W2_h k_j) -> additive_attention (its own backward)
// Cosine divides by max(|q|, 1e-8) and max(|k|, 1e-8) separately, the engine by
// max(|q| |k|, 1e-8): the same unless a vector is shorter than 1e-8.
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "core/config/config.h"
#include "core/train/train_tape.h"

namespace atlas::train {

// Per head h: block h of x [L, H*dh] times W_h, W_h = row h of w [H, dh*dh] as [dh, dh].
template <class S>
int head_matmul(Tape<S>& t, int x, int w, int heads) {
  using M = MatT<S>;
  const M &X = t.value(x), &W = t.value(w);
  const Eigen::Index dh = X.cols() / heads;
  auto wh = [dh](const M& Wm, int h) {
    return Eigen::Map<const MatT<S>>(Wm.data() + Eigen::Index(h) * dh * dh, dh, dh);
  };
  M y(X.rows(), X.cols());
  for (int h = 0; h < heads; ++h) y.middleCols(h * dh, dh).noalias() = X.middleCols(h * dh, dh) * wh(W, h);
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    const M &X = t.value(x), &W = t.value(w);
    M& dx = t.grad(x);
    M& dw = t.grad(w);
    for (int h = 0; h < heads; ++h) {
      dx.middleCols(h * dh, dh).noalias() += dy.middleCols(h * dh, dh) * wh(W, h).transpose();
      Eigen::Map<M>(dw.data() + Eigen::Index(h) * dh * dh, dh, dh).noalias() +=
          X.middleCols(h * dh, dh).transpose() * dy.middleCols(h * dh, dh);
    }
  });
}

// Each head's block of each row scaled to unit length: y = x / max(|x|, eps).
template <class S>
int head_unit_rows(Tape<S>& t, int x, int heads, S eps = S(1e-8)) {
  using M = MatT<S>;
  const M& X = t.value(x);
  const Eigen::Index dh = X.cols() / heads;
  M y(X.rows(), X.cols());
  auto norms = std::make_shared<M>(X.rows(), heads);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    for (int h = 0; h < heads; ++h) {
      const S n = std::max<S>(X.row(i).segment(h * dh, dh).norm(), eps);
      (*norms)(i, h) = n;
      y.row(i).segment(h * dh, dh) = X.row(i).segment(h * dh, dh) / n;
    }
  return t.record(y, [=, y = y](Tape<S>& t, const M& dy) {
    M& dx = t.grad(x);
    for (Eigen::Index i = 0; i < y.rows(); ++i)
      for (int h = 0; h < heads; ++h) {
        const S n = (*norms)(i, h);
        const auto yi = y.row(i).segment(h * dh, dh);
        const auto gi = dy.row(i).segment(h * dh, dh);
        if (n <= eps) {  // clamped: y = x / const
          dx.row(i).segment(h * dh, dh) += gi / n;
          continue;
        }
        dx.row(i).segment(h * dh, dh) += (gi - yi * yi.dot(gi)) / n;
      }
  });
}

// Location keys: block h of the result [Lk, H*dh] is rows 0..Lk-1 of W_h, W_h = row h of
// w [H, max_positions*dh] as [max_positions, dh].
template <class S>
int head_key_rows(Tape<S>& t, int w, int heads, Eigen::Index lk, Eigen::Index dh) {
  using M = MatT<S>;
  const M& W = t.value(w);
  const Eigen::Index rows = W.cols() / dh;
  M y(lk, heads * dh);
  for (int h = 0; h < heads; ++h)
    y.middleCols(h * dh, dh) = Eigen::Map<const M>(W.data() + Eigen::Index(h) * rows * dh, rows, dh).topRows(lk);
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    M& dw = t.grad(w);
    for (int h = 0; h < heads; ++h)
      Eigen::Map<M>(dw.data() + Eigen::Index(h) * rows * dh, rows, dh).topRows(lk) += dy.middleCols(h * dh, dh);
  });
}

// Additive (Bahdanau) attention of every head: e_ij = v_h . tanh(W1_h q_i + W2_h k_j),
// p = masked softmax(e), o_i = sum_j p_ij v_j. w1, w2 [H, d_attn*dh], va [H, d_attn]. Hard
// masks from spec; dropout and DropHead multipliers are not applied (refused by the trainer).
// Backward: ds = p (dp - rowsum(dp p)); with t_ij = tanh(a_i + b_j), g_ij = ds_ij v (1 - t_ij^2):
//   dv_h += sum ds_ij t_ij, da_i += sum_j g_ij, db_j += sum_i g_ij, a = q W1^T, b = k W2^T.
template <class S>
int additive_attention(Tape<S>& t, int q, int k, int v, int w1, int w2, int va, const AttentionSpec<S>& spec) {
  using M = MatT<S>;
  const int H = spec.heads;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v);
  const Eigen::Index lq = Q.rows(), lk = K.rows(), dh = Q.cols() / H, da = t.value(va).cols();
  const S neg_inf = -std::numeric_limits<S>::infinity();
  auto allowed = [&spec](Eigen::Index i, Eigen::Index j) {
    return !(spec.causal && j > i) && (spec.key_valid.empty() || spec.key_valid[size_t(j)]);
  };
  auto weights = [da, dh](const M& Wm, int h) {  // [d_attn, dh] of head h
    return Eigen::Map<const M>(Wm.data() + Eigen::Index(h) * da * dh, da, dh);
  };
  auto probs = std::make_shared<std::vector<M>>(size_t(H));
  M out = M::Zero(lq, H * dh);
  for (int h = 0; h < H; ++h) {
    const M a = Q.middleCols(h * dh, dh) * weights(t.value(w1), h).transpose();  // [Lq, da]
    const M b = K.middleCols(h * dh, dh) * weights(t.value(w2), h).transpose();  // [Lk, da]
    const auto vh = t.value(va).row(h);
    M s(lq, lk);
    for (Eigen::Index i = 0; i < lq; ++i)
      for (Eigen::Index j = 0; j < lk; ++j)
        s(i, j) = allowed(i, j) ? (a.row(i) + b.row(j)).array().tanh().matrix().dot(vh) : neg_inf;
    softmax_rows(s);
    out.middleCols(h * dh, dh).noalias() = with_keep(s, spec.prob_keep, h) * V.middleCols(h * dh, dh);
    (*probs)[size_t(h)] = std::move(s);
  }
  return t.record(std::move(out), [=](Tape<S>& t, const M& dout) {
    const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &W1 = t.value(w1), &W2 = t.value(w2),
            &VA = t.value(va);
    M& dq = t.grad(q);
    M& dkm = t.grad(k);
    M& dvm = t.grad(v);
    M& dw1 = t.grad(w1);
    M& dw2 = t.grad(w2);
    M& dva = t.grad(va);
    for (int h = 0; h < H; ++h) {
      const M& P = (*probs)[size_t(h)];
      const M dO = dout.middleCols(h * dh, dh);
      dvm.middleCols(h * dh, dh).noalias() += with_keep(P, spec.prob_keep, h).transpose() * dO;
      const M dP = with_keep(M(dO * V.middleCols(h * dh, dh).transpose()), spec.prob_keep, h);
      const M dS = softmax_backward(P, dP);
      const M a = Q.middleCols(h * dh, dh) * weights(W1, h).transpose();
      const M b = K.middleCols(h * dh, dh) * weights(W2, h).transpose();
      const auto vh = VA.row(h);
      M da_acc = M::Zero(lq, da), db_acc = M::Zero(lk, da);
      for (Eigen::Index i = 0; i < lq; ++i)
        for (Eigen::Index j = 0; j < lk; ++j) {
          if (P(i, j) == S(0)) continue;  // masked (or underflowed): no gradient through e_ij
          const auto tij = (a.row(i) + b.row(j)).array().tanh().matrix().eval();
          dva.row(h) += dS(i, j) * tij;
          const auto g = (dS(i, j) * vh.array() * (S(1) - tij.array().square())).matrix().eval();
          da_acc.row(i) += g;
          db_acc.row(j) += g;
        }
      dq.middleCols(h * dh, dh).noalias() += da_acc * weights(W1, h);
      dkm.middleCols(h * dh, dh).noalias() += db_acc * weights(W2, h);
      Eigen::Map<M>(dw1.data() + Eigen::Index(h) * da * dh, da, dh).noalias() +=
          da_acc.transpose() * Q.middleCols(h * dh, dh);
      Eigen::Map<M>(dw2.data() + Eigen::Index(h) * da * dh, da, dh).noalias() +=
          db_acc.transpose() * K.middleCols(h * dh, dh);
    }
  });
}

// A score function's attention on the tape, the kernel of its mechanism
// (core/variants/score_functions/mechanism.cpp); scaled dot is the tape's own op. weight(name)
// is a parameter's node.
template <class S, class Weight>
int score_function_tape_attention(Tape<S>& t, const ModelConfig& c, int q, int k, int v,
                                  const std::string& prefix, AttentionSpec<S> spec,
                                  Weight&& w) {
  const int H = static_cast<int>(c.n_heads);
  switch (c.score_function().function) {
    case ScoreFunction::ScaledDot: break;
    case ScoreFunction::Dot: spec.scale = S(1); break;
    case ScoreFunction::General:
      q = head_matmul(t, q, w(prefix + ".score.w"), H);
      spec.scale = S(1);
      break;
    case ScoreFunction::Cosine:
      q = head_unit_rows(t, q, H);
      k = head_unit_rows(t, k, H);
      spec.scale = S(c.score_function().strength);
      break;
    case ScoreFunction::Location:
      k = head_key_rows(t, w(prefix + ".score.w"), H, t.value(k).rows(), c.d_head());
      spec.scale = S(1);
      break;
    case ScoreFunction::Additive:
      return additive_attention(t, q, k, v, w(prefix + ".score.w1"), w(prefix + ".score.w2"),
                                w(prefix + ".score.v"), spec);
  }
  return t.attention(q, k, v, std::move(spec));
}

}  // namespace atlas::train
