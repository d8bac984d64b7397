#pragma once
// Transformer-XL on the tape (the inference version is core/variants/transformer_xl/transformer_xl.cpp): row ops to
// build the keys from the detached memory and the segment, and the relative attention
//   s_ij = [ (q_i + u) . k_j + (q_i + v) . rk_{d(i,j)} ] / sqrt(d_head),   rk = R W_kR^T,
// with query i at key position p = m + i, d = min(p - j, clamp_len), keys j <= p (and
// j > p - mem_len with same_length). Backward, with ds = p (dp - rowsum(dp p)) / sqrt(d_head):
//   dq_i += sum_j ds_ij (k_j + rk_d),  du += sum ds_ij k_j,  dk_j += sum_i ds_ij (q_i + u),
//   dv_bias += sum ds_ij rk_d,  drk_d += sum_{d(i,j) = d} ds_ij (q_i + v),  dv_j += sum_i p_ij do_i.
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/train/train_tape.h"
#include "core/variants/transformer_xl/transformer_xl.h"

namespace atlas::train {

// [a; b] stacked by rows (a may have no rows).
template <class S>
int stack_rows(Tape<S>& t, int a, int b) {
  using M = MatT<S>;
  const M &A = t.value(a), &B = t.value(b);
  M y(A.rows() + B.rows(), B.cols());
  if (A.rows()) y.topRows(A.rows()) = A;
  y.bottomRows(B.rows()) = B;
  const Eigen::Index ra = A.rows();
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) {
    if (ra) t.grad(a) += dy.topRows(ra);
    t.grad(b) += dy.bottomRows(dy.rows() - ra);
  });
}

// Rows [begin, begin + count) of x.
template <class S>
int slice_rows(Tape<S>& t, int x, Eigen::Index begin, Eigen::Index count) {
  using M = MatT<S>;
  M y = t.value(x).middleRows(begin, count);
  return t.record(std::move(y), [=](Tape<S>& t, const M& dy) { t.grad(x).middleRows(begin, count) += dy; });
}

// q [Lq, H*dh], k, v [Lk, H*dh] with Lk = m + Lq, rk [distances, H*dh], u and vb [H, dh];
// prob_keep: attention-dropout multipliers [H*Lq*Lk] or empty.
template <class S>
int xl_relative_attention(Tape<S>& t, int q, int k, int v, int rk, int u, int vb, int heads,
                          const XLConfig& x, std::vector<S> prob_keep = {}) {
  using M = MatT<S>;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &RK = t.value(rk), &U = t.value(u),
          &VB = t.value(vb);
  const Eigen::Index lq = Q.rows(), lk = K.rows(), m = lk - lq, dh = Q.cols() / heads;
  const S scale = S(1) / std::sqrt(S(float(dh)));
  auto probs = std::make_shared<std::vector<M>>(size_t(heads));
  auto visible = [&x, m](Eigen::Index i, Eigen::Index j) { return xl_key_visible(m + i, j, x.mem_len, x.same_length); };
  auto dist = [&x, m](Eigen::Index i, Eigen::Index j) { return Eigen::Index(xl_distance(m + i, j, x.clamp_len)); };
  M out = M::Zero(lq, heads * dh);
  for (int h = 0; h < heads; ++h) {
    const auto qh = Q.middleCols(h * dh, dh), kh = K.middleCols(h * dh, dh), rh = RK.middleCols(h * dh, dh);
    M s(lq, lk);
    for (Eigen::Index i = 0; i < lq; ++i) {
      const auto qu = (qh.row(i) + U.row(h)).eval(), qv = (qh.row(i) + VB.row(h)).eval();
      for (Eigen::Index j = 0; j < lk; ++j)
        s(i, j) = visible(i, j) ? (qu.dot(kh.row(j)) + qv.dot(rh.row(dist(i, j)))) * scale
                                : -std::numeric_limits<S>::infinity();
    }
    softmax_rows(s);  // the diagonal key is always visible
    out.middleCols(h * dh, dh).noalias() = with_keep(s, prob_keep, h) * V.middleCols(h * dh, dh);
    (*probs)[size_t(h)] = std::move(s);
  }
  return t.record(std::move(out), [=, prob_keep = std::move(prob_keep)](Tape<S>& t, const M& dout) {
    const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &RK = t.value(rk), &U = t.value(u),
            &VB = t.value(vb);
    M& dq = t.grad(q);
    M& dkm = t.grad(k);
    M& dvm = t.grad(v);
    M& drk = t.grad(rk);
    M& du = t.grad(u);
    M& dvb = t.grad(vb);
    for (int h = 0; h < heads; ++h) {
      const M& P = (*probs)[size_t(h)];
      const M dO = dout.middleCols(h * dh, dh);
      dvm.middleCols(h * dh, dh).noalias() += with_keep(P, prob_keep, h).transpose() * dO;
      const M dP = with_keep(M(dO * V.middleCols(h * dh, dh).transpose()), prob_keep, h);
      const M dS = softmax_backward(P, dP) * scale;
      for (Eigen::Index i = 0; i < lq; ++i) {
        const auto qu = (Q.row(i).segment(h * dh, dh) + U.row(h)).eval();
        const auto qv = (Q.row(i).segment(h * dh, dh) + VB.row(h)).eval();
        for (Eigen::Index j = 0; j < lk; ++j) {
          const S g = dS(i, j);
          // Masked keys have no distance row. Their p is not exactly 0: Eigen's vectorised exp
          // clamps -inf to its lowest argument (a denormal in double), so test the mask itself.
          if (g == S(0) || !visible(i, j)) continue;
          const Eigen::Index d = dist(i, j);
          const auto kj = K.row(j).segment(h * dh, dh), rd = RK.row(d).segment(h * dh, dh);
          dq.row(i).segment(h * dh, dh) += g * (kj + rd);
          du.row(h) += g * kj;
          dvb.row(h) += g * rd;
          dkm.row(j).segment(h * dh, dh) += g * qu;
          drk.row(d).segment(h * dh, dh) += g * qv;
        }
      }
    }
  });
}

// The same for a model's XL section and heads (the tape executor's XlExecutor method).
template <class S>
int xl_relative_attention(Tape<S>& t, const ModelConfig& c, int q, int k, int v, int rk, int u, int vb,
                          std::vector<S> prob_keep = {}) {
  return xl_relative_attention(t, q, k, v, rk, u, vb, static_cast<int>(c.n_heads), *c.xl(), std::move(prob_keep));
}

}  // namespace atlas::train
