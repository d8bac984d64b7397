#pragma once
// ALiBi attention on the training tape (the inference version is alibi_attention_op.cpp): per
// head h with slope m_h,
//   s_ij = scale q_i . k_j - m_h |i + Lk - Lq - j|  (masked = -inf),  p = softmax(s),
//   o_i = sum_j p_ij v_j
// The bias is a constant of the positions, so the backward is plain attention's
// (dp = do v^T, ds = p (dp - rowsum(dp p)) scale, dq = ds k, dk = ds^T q, dv = p^T do): the op
// is the tape's attention with the biases as its additive score term (AttentionSpec::score_bias),
// attention dropout and the masks from the spec (causal as the spec says, key padding, a window).
#include <vector>

#include "core/train/train_tape.h"
#include "core/variants/alibi/alibi_slopes.h"

namespace atlas::train {

// q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv] (tape nodes); slopes [H].
template <class S>
int alibi_attention(Tape<S>& t, int q, int k, int v, AttentionSpec<S> spec,
                    const std::vector<float>& slopes) {
  const Eigen::Index lq = t.value(q).rows(), lk = t.value(k).rows();
  const int H = spec.heads;
  std::vector<S> bias(size_t(H * lq * lk));  // [H, Lq, Lk], rows as score_bias's
  for (int h = 0; h < H; ++h)
    for (Eigen::Index i = 0; i < lq; ++i)
      for (Eigen::Index j = 0; j < lk; ++j)
        bias[size_t((h * lq + i) * lk + j)] =
            -S(slopes[size_t(h)]) * S(alibi_distance(i, j, lq, lk));
  if (spec.score_bias.empty()) {
    spec.score_bias = std::move(bias);
  } else {  // another additive term already there: the sum
    for (size_t n = 0; n < bias.size(); ++n) spec.score_bias[n] += bias[n];
  }
  return t.attention(q, k, v, std::move(spec));
}

}  // namespace atlas::train
