// Shaw et al., "Self-Attention with Relative Position Representations" (seed 001, section
// 1.2; REFERENCES.md):
//   e_ij = q_i (k_j + a^K_ij)^T / sqrt(d_z)                         (eq. 2)
//   z_i  = sum_j alpha_ij (v_j + a^V_ij)                            (eq. 4)
//   a^K_ij = w^K_clip(j - i, k), a^V_ij = w^V_clip(j - i, k), clip(x, k) = max(-k, min(k, x))
// The tables are per layer and shared across heads. Efficient form (eq. 5): split e_ij into
// q_i k_j^T + q_i a^K_ij^T; the second term takes only 2k+1 distinct vectors per query, so it
// is computed as Q A^K^T [Lq, 2k+1] once and gathered, instead of one dot product per (i, j).
// The value term likewise sums the probabilities per distance bucket before multiplying by
// A^V. The direct per-(i, j) form is kept as an option and as a cross-check.
#include <algorithm>

#include "core/variants/shaw/shaw.h"

namespace atlas {

int64_t shaw_index(int64_t i, int64_t j, int64_t lq, int64_t lk, int64_t k) {
  const int64_t pos_i = i + (lk - lq);  // queries are the last lq key positions
  return std::clamp(j - pos_i, -k, k) + k;
}

Mat shaw_key_term(const Mat& qh, const Mat& ak, int64_t lk, int64_t k, bool efficient) {
  const int64_t lq = qh.rows();
  Mat out(lq, lk);
  if (efficient) {
    const Mat per_distance = qh * ak.transpose();  // [Lq, 2k+1]
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) out(i, j) = per_distance(i, shaw_index(i, j, lq, lk, k));
  } else {
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j)
        out(i, j) = qh.row(i).dot(ak.row(shaw_index(i, j, lq, lk, k)));
  }
  return out;
}

Mat shaw_value_term(const Mat& probs, const Mat& av, int64_t k, bool efficient) {
  const int64_t lq = probs.rows(), lk = probs.cols();
  if (efficient) {
    Mat buckets = Mat::Zero(lq, 2 * k + 1);  // probability mass per clipped distance
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) buckets(i, shaw_index(i, j, lq, lk, k)) += probs(i, j);
    return buckets * av;
  }
  Mat out = Mat::Zero(lq, av.cols());
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j) out.row(i) += probs(i, j) * av.row(shaw_index(i, j, lq, lk, k));
  return out;
}

}  // namespace atlas
