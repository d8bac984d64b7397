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
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/array_name_parts.h"  // layer_index_of
#include "core/train/train_tape.h"
#include "core/variants/performer/favor_features.h"
#include "core/variants/performer/performer.h"

namespace atlas::train {

// Why a Performer trains without attention dropout (the training loop's hook and the tape op).
inline const char* performer_attention_dropout_refusal() {
  return "attention dropout needs the attention probabilities, which a Performer never forms "
         "(FAVOR+ multiplies features); use dropout or DropHead instead";
}

template <class S>
int performer_attention(Tape<S>& t, int q, int k, int v, const std::vector<Mat>& features,
                        const AttentionSpec<S>& spec) {
  using M = MatT<S>;
  if (!spec.prob_keep.empty()) throw AtlasError(performer_attention_dropout_refusal());
  const int H = spec.heads;
  const M &Q = t.value(q), &K = t.value(k), &V = t.value(v);
  const Eigen::Index lq = Q.rows(), dh = Q.cols() / H, dv = V.cols() / H, lk = K.rows();
  const S scale = std::pow(S(dh), S(-0.25));  // favor_features' x' = x d^(-1/4)
  struct Head {
    M w, pq, pk, a;  // features [m, dh]; phi(Q) [Lq, m]; phi(K) [Lk, m]; A / r [Lq, Lk]
    std::vector<S> r;
  };
  auto heads = std::make_shared<std::vector<Head>>(size_t(H));
  M out = M::Zero(lq, H * dv);
  for (int h = 0; h < H; ++h) {
    Head& hd = (*heads)[size_t(h)];
    hd.w = features[size_t(h)].template cast<S>();
    hd.pq = favor_features(Q.middleCols(h * dh, dh), hd.w, true);
    hd.pk = favor_key_features(K.middleCols(h * dh, dh), hd.w, spec.key_valid);
    hd.a = favor_implicit_from_features(hd.pq, hd.pk, spec.causal, &hd.r);
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

// The attention of self-attention sub-layer `prefix` of a Performer model, with the inference
// engine's features of that layer.
template <class S>
int performer_attention(Tape<S>& t, int q, int k, int v, const ModelConfig& c,
                        const std::string& prefix, const AttentionSpec<S>& spec) {
  return performer_attention(
      t, q, k, v, performer_layer_features(*c.performer(), layer_index_of(prefix), c.n_heads, c.d_head()),
      spec);
}

}  // namespace atlas::train
