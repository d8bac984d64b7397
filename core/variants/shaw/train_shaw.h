#pragma once
// Shaw et al. relation-aware self-attention on the tape (seed 001; the inference version is
// core/variants/shaw/shaw.cpp + core/variants/relative_attention/relative_attention.cpp). Per head, with the tables a^K, a^V [2k+1, d_h]
// shared by the heads of a layer and r(i, j) = clip(j - i, -k, k) + k:
//   s_ij = scale q_i . (k_j + a^K_r(i,j)),  p = masked softmax(s),  o_i = sum_j p_ij (v_j + a^V_r(i,j))
// Backward: dp_ij = do_i . (v_j + a^V_r), ds = p (dp - rowsum(dp p)) scale;
//   dv_j += p_ij do_i,  da^V_r += p_ij do_i,  dq_i += ds_ij (k_j + a^K_r),
//   dk_j += ds_ij q_i,  da^K_r += ds_ij q_i.
#include <memory>

#include "core/train/train_tape.h"
#include "core/variants/shaw/shaw.h"

namespace atlas::train {

// q [Lq, H*dh], k, v [Lk, H*dh], rel_k, rel_v [2k+1, dh] (tape nodes); hard masks and the
// attention-dropout multipliers from spec (dropout applies to p in both sums of o_i).
template <class S>
int shaw_attention(Tape<S>& t, int q, int k, int v, int rel_k, int rel_v, const AttentionSpec<S>& spec,
                   int64_t max_distance) {
  using M = MatT<S>;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &AK = t.value(rel_k), &AV = t.value(rel_v);
  const int H = spec.heads;
  const Eigen::Index lq = Q.rows(), lk = K.rows(), dh = Q.cols() / H;
  const S neg_inf = -std::numeric_limits<S>::infinity();
  std::vector<int64_t> idx(size_t(lq * lk));
  for (Eigen::Index i = 0; i < lq; ++i)
    for (Eigen::Index j = 0; j < lk; ++j) idx[size_t(i * lk + j)] = shaw_index(i, j, lq, lk, max_distance);
  auto allowed = [&spec](Eigen::Index i, Eigen::Index j) {
    return !(spec.causal && j > i) && (spec.key_valid.empty() || spec.key_valid[size_t(j)]);
  };
  auto probs = std::make_shared<std::vector<M>>(size_t(H));
  M out = M::Zero(lq, H * dh);
  for (int h = 0; h < H; ++h) {
    const auto Qh = Q.middleCols(h * dh, dh);
    const M per_distance = Qh * AK.transpose();  // [Lq, 2k+1]: q_i . a^K_r
    M s = (Qh * K.middleCols(h * dh, dh).transpose());
    for (Eigen::Index i = 0; i < lq; ++i)
      for (Eigen::Index j = 0; j < lk; ++j)
        s(i, j) = allowed(i, j) ? (s(i, j) + per_distance(i, idx[size_t(i * lk + j)])) * spec.scale : neg_inf;
    softmax_rows(s);
    const M used = with_keep(s, spec.prob_keep, h);
    M buckets = M::Zero(lq, AV.rows());  // probability mass per clipped distance
    for (Eigen::Index i = 0; i < lq; ++i)
      for (Eigen::Index j = 0; j < lk; ++j) buckets(i, idx[size_t(i * lk + j)]) += used(i, j);
    out.middleCols(h * dh, dh) = used * V.middleCols(h * dh, dh) + buckets * AV;
    (*probs)[size_t(h)] = std::move(s);
  }
  return t.record(std::move(out), [=, idx = std::move(idx)](Tape<S>& t, const M& dout) {
    const M &Q = t.value(q), &K = t.value(k), &V = t.value(v), &AK = t.value(rel_k), &AV = t.value(rel_v);
    M& dq = t.grad(q);
    M& dkm = t.grad(k);
    M& dvm = t.grad(v);
    M& dak = t.grad(rel_k);
    M& dav = t.grad(rel_v);
    for (int h = 0; h < H; ++h) {
      const M& P = (*probs)[size_t(h)];
      const M used = with_keep(P, spec.prob_keep, h);
      const M dO = dout.middleCols(h * dh, dh);                       // [Lq, dh]
      dvm.middleCols(h * dh, dh).noalias() += used.transpose() * dO;
      M dP = dO * V.middleCols(h * dh, dh).transpose();               // do_i . v_j
      const M dO_AV = dO * AV.transpose();                            // do_i . a^V_r  [Lq, 2k+1]
      for (Eigen::Index i = 0; i < lq; ++i)
        for (Eigen::Index j = 0; j < lk; ++j) {
          const int64_t r = idx[size_t(i * lk + j)];
          dP(i, j) += dO_AV(i, r);
          dav.row(r) += used(i, j) * dO.row(i);
        }
      dP = with_keep(dP, spec.prob_keep, h);
      const M dS = softmax_backward(P, dP) * spec.scale;
      dq.middleCols(h * dh, dh).noalias() += dS * K.middleCols(h * dh, dh);
      dkm.middleCols(h * dh, dh).noalias() += dS.transpose() * Q.middleCols(h * dh, dh);
      M ds_buckets = M::Zero(lq, AK.rows());  // sum of ds over the keys at each distance
      for (Eigen::Index i = 0; i < lq; ++i)
        for (Eigen::Index j = 0; j < lk; ++j) ds_buckets(i, idx[size_t(i * lk + j)]) += dS(i, j);
      dq.middleCols(h * dh, dh).noalias() += ds_buckets * AK;
      dak.noalias() += ds_buckets.transpose() * Q.middleCols(h * dh, dh);
    }
  });
}

}  // namespace atlas::train
