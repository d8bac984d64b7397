#pragma once
// One query row of the adaptive span's attention (Sukhbaatar et al. 2019, seed 000), the one
// function behind the inference op's host reference (relative_attention_op.cpp: float values,
// W = double sums) and the training tape (train_span.h: the tape's scalar throughout):
//   inside (paper):     a_j = m_j exp(e_j - M) / sum_r m_r exp(e_r - M) over the keys with
//                       m > 0, M their largest score
//   after (reference):  p = softmax(e) over the allowed keys,
//                       a_j = p_j m_j / (sum_r p_r m_r + 1e-8)
// e [lk] the row's scaled scores, -inf where the hard mask (causal, padding) forbids the key;
// m [lk] the soft mask (span_mask.h), 0 there. With m = 1 on every allowed key, "inside" is the
// plain softmax (Shaw's attention without a span). Sums run over j in order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace atlas {

// Writes a [lk] (it must hold zeros: a row without any key stays 0) and, when given, p [lk]
// (after: the softmax before the mask). Returns what a was divided by after the mask (after:
// sum p m + 1e-8; 1 for inside or a row without keys), which the tape's backward reads.
template <class W, class S>
S span_softmax_row(const S* e, const S* m, int64_t lk, bool after, S* a, S* p = nullptr) {
  const S ninf = -std::numeric_limits<S>::infinity();
  S mx = ninf;
  for (int64_t j = 0; j < lk; ++j)
    if (after || m[j] > S(0)) mx = std::max(mx, e[j]);
  if (mx == ninf) return S(1);  // no key: a zero row, not NaN
  if (after) {
    W zsum = 0, msum = 0;
    for (int64_t j = 0; j < lk; ++j) zsum += e[j] == ninf ? W(0) : std::exp(W(e[j] - mx));
    for (int64_t j = 0; j < lk; ++j) {
      const W pj = e[j] == ninf ? W(0) : std::exp(W(e[j] - mx)) / zsum;
      if (p) p[j] = S(pj);
      a[j] = S(pj * W(m[j]));
      msum += pj * W(m[j]);
    }
    const S denom = S(msum + W(1e-8));
    for (int64_t j = 0; j < lk; ++j) a[j] /= denom;
    return denom;
  }
  W zsum = 0;
  for (int64_t j = 0; j < lk; ++j)
    if (e[j] != ninf && m[j] > S(0)) {
      a[j] = S(W(m[j]) * std::exp(W(e[j] - mx)));
      zsum += W(a[j]);
    }
  const S sum = S(zsum);
  for (int64_t j = 0; j < lk; ++j) a[j] /= sum;
  return S(1);
}

}  // namespace atlas
