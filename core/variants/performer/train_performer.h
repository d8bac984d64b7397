#pragma once
// Performer FAVOR+ self-attention on the tape (the inference version is core/variants/performer/performer.cpp,
// same random features per (seed, layer, head)). Per head, with x' = x d^(-1/4) and W [m, d]:
//   phi(x)_r = m^(-1/2) exp(w_r . x' - |x'|^2 / 2 - shift),  A = phi(Q) phi(K)^T (causal: j <= i;
//   padded keys: phi = 0),  out_i = sum_j A_ij v_j / sum_j A_ij.
// The shifts (per query row, one for all keys) cancel in the ratio, so they are constants for
// the gradient. Training sequences are short: A is formed densely, O(L^2 m) per head, and the
// causal case is the lower triangle instead of the engine's prefix sums (the same sums).
// Backward, with r_i = sum_j A_ij: dv_j += sum_i A_ij / r_i do_i; dA_ij = do_i . (v_j - out_i) / r_i;
//   dphi(Q) = dA phi(K), dphi(K) = dA^T phi(Q); dx'_i = (dphi * phi)_i W - (sum_r dphi_ir phi_ir) x'_i.
#include <cmath>
#include <memory>
#include <vector>

#include "core/variants/performer/performer.h"
#include "core/train/train_tape.h"

namespace atlas::train {

template <class S>
int performer_attention(Tape<S>& t, int q, int k, int v, const std::vector<Mat>& features,
                        const AttentionSpec<S>& spec) {
  using M = MatT<S>;
  const int H = spec.heads;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v);
  const Eigen::Index lq = Q.rows(), lk = K.rows(), dh = Q.cols() / H, dv = V.cols() / H;
  const S scale = S(std::pow(double(dh), -0.25));
  // phi of the rows of x [L, dh] with features w [m, dh]; `per_row` picks the stabilising shift.
  auto phi = [scale](const auto& x, const M& w, bool per_row) {
    const M xs = x * scale;
    M proj = xs * w.transpose();
    const S global = proj.size() ? proj.maxCoeff() : S(0);
    const S norm = S(1) / std::sqrt(S(w.rows()));
    for (Eigen::Index i = 0; i < proj.rows(); ++i) {
      const S shift = per_row ? proj.row(i).maxCoeff() : global;
      const S half = xs.row(i).squaredNorm() / 2;
      for (Eigen::Index r = 0; r < proj.cols(); ++r) proj(i, r) = norm * std::exp(proj(i, r) - half - shift);
    }
    return proj;
  };
  struct Head {
    M w, pq, pk, a;  // features [m, dh]; phi(Q) [Lq, m]; phi(K) [Lk, m]; A / r [Lq, Lk]
    std::vector<S> r;
  };
  auto heads = std::make_shared<std::vector<Head>>(size_t(H));
  M out = M::Zero(lq, H * dv);
  for (int h = 0; h < H; ++h) {
    Head& hd = (*heads)[size_t(h)];
    hd.w = features[size_t(h)].template cast<S>();
    hd.pq = phi(Q.middleCols(h * dh, dh), hd.w, true);
    hd.pk = phi(K.middleCols(h * dh, dh), hd.w, false);
    for (size_t j = 0; j < spec.key_valid.size(); ++j)
      if (!spec.key_valid[j]) hd.pk.row(Eigen::Index(j)).setZero();
    hd.a = hd.pq * hd.pk.transpose();
    hd.r.assign(size_t(lq), S(0));
    for (Eigen::Index i = 0; i < lq; ++i) {
      if (spec.causal)
        for (Eigen::Index j = i + 1; j < lk; ++j) hd.a(i, j) = S(0);
      const S s = hd.a.row(i).sum();
      hd.r[size_t(i)] = s;
      if (s > 0) hd.a.row(i) /= s;  // an all-zero row outputs zeros, as the engine's den = 1
    }
    out.middleCols(h * dv, dv).noalias() = hd.a * V.middleCols(h * dv, dv);
  }
  const M out_copy = out;
  return t.record(std::move(out), [=](Tape<S>& t, const M& dout) {
    const M &Q = t.value(q), &K = t.value(k), &V = t.value(v);
    M& dq = t.grad(q);
    M& dkm = t.grad(k);
    M& dvm = t.grad(v);
    for (int h = 0; h < H; ++h) {
      const Head& hd = (*heads)[size_t(h)];
      const M dO = dout.middleCols(h * dv, dv);
      dvm.middleCols(h * dv, dv).noalias() += hd.a.transpose() * dO;
      // dA_ij on the unnormalised A: do_i . (v_j - out_i) / r_i where A_ij counts, else 0.
      M dA = dO * V.middleCols(h * dv, dv).transpose();
      const auto self = dO.cwiseProduct(out_copy.middleCols(h * dv, dv)).rowwise().sum().eval();
      for (Eigen::Index i = 0; i < lq; ++i) {
        const S r = hd.r[size_t(i)];
        for (Eigen::Index j = 0; j < lk; ++j)
          dA(i, j) = (r > 0 && !(spec.causal && j > i)) ? (dA(i, j) - self(i)) / r : S(0);
      }
      const M dpq = dA * hd.pk, dpk = dA.transpose() * hd.pq;
      auto back = [&](const M& dphi, const M& p, const auto& x, auto&& dx) {
        const M g = dphi.cwiseProduct(p);  // d/du of phi = phi
        const auto gsum = g.rowwise().sum().eval();
        dx += ((g * hd.w) - (x * scale).cwiseProduct(gsum.replicate(1, dh))) * scale;
      };
      back(dpq, hd.pq, Q.middleCols(h * dh, dh), dq.middleCols(h * dh, dh));
      back(dpk, hd.pk, K.middleCols(h * dh, dh), dkm.middleCols(h * dh, dh));
    }
  });
}

}  // namespace atlas::train
