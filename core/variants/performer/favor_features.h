#pragma once
// FAVOR+'s positive random features and its implicit attention (Choromanski et al., seed 003),
// written once for the inference engine (performer.cpp: float) and the training tape
// (train_performer.h: float or double):
//   phi(x)_r = m^(-1/2) exp(w_r . x' - |x'|^2 / 2 - shift),  x' = x d^(-1/4),  r = 1..m
//   A = rownorm(phi(Q) phi(K)^T)  (causal: j <= i; keys with key_valid 0: phi = 0)
// The shift, the row's largest projection for queries and the largest over all keys for keys,
// keeps exp in range and cancels in the attention's ratio.
#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace atlas {

template <class S>
using FavorMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// phi(X) [L, m] for the rows of x [L, d] and the features w [m, d]; per_row_shift: the queries'
// shift, else the keys'.
template <class S, class X>
FavorMat<S> favor_features(const X& x, const FavorMat<S>& w, bool per_row_shift) {
  const int64_t d = x.cols(), m = w.rows();
  const S s = std::pow(S(d), S(-0.25));
  FavorMat<S> proj = (x * s) * w.transpose();  // [L, m] = w_r . x'
  const Eigen::Matrix<S, Eigen::Dynamic, 1> half_norm = (x * s).rowwise().squaredNorm() * S(0.5);
  S global = -std::numeric_limits<S>::infinity();
  if (!per_row_shift) global = proj.size() ? proj.maxCoeff() : S(0);
  const S norm = S(1) / std::sqrt(S(m));
  for (int64_t i = 0; i < proj.rows(); ++i) {
    const S shift = per_row_shift ? proj.row(i).maxCoeff() : global;
    for (int64_t r = 0; r < m; ++r) proj(i, r) = norm * std::exp(proj(i, r) - half_norm(i) - shift);
  }
  return proj;
}

// phi(K) with the keys' shift, padded keys (key_valid 0) zeroed; key_valid may be empty.
template <class S, class X>
FavorMat<S> favor_key_features(const X& k, const FavorMat<S>& w,
                               const std::vector<uint8_t>& key_valid) {
  FavorMat<S> pk = favor_features(k, w, false);
  for (size_t j = 0; j < key_valid.size(); ++j)
    if (!key_valid[j]) pk.row(int64_t(j)).setZero();
  return pk;
}

// The implicit attention rownorm(phi(Q) phi(K)^T) [Lq, Lk] from the features (causal: lower
// triangle); a row whose sum is 0 stays 0. row_sums, when given, gets each row's sum [Lq].
template <class S>
FavorMat<S> favor_implicit_from_features(const FavorMat<S>& pq, const FavorMat<S>& pk, bool causal,
                                         std::vector<S>* row_sums = nullptr) {
  FavorMat<S> a = pq * pk.transpose();
  if (row_sums) row_sums->assign(size_t(a.rows()), S(0));
  for (int64_t i = 0; i < a.rows(); ++i) {
    if (causal)
      for (int64_t j = i + 1; j < a.cols(); ++j) a(i, j) = S(0);
    const S sum = a.row(i).sum();
    if (row_sums) (*row_sums)[size_t(i)] = sum;
    if (sum > 0) a.row(i) /= sum;
  }
  return a;
}

}  // namespace atlas
