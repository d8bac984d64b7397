#pragma once
// Shaw relative positions' formula pieces (core/variants/shaw/shaw.cpp has the equations), shared
// by the relative_attention module op (core/variants/relative_attention/relative_attention_op.h),
// its trace and the training op (train_shaw.h).
#include <cstdint>

#include "core/tensor/tensor.h"

namespace atlas {

// clip(j - i, -k, k) + k, with query i at key position i + (lk - lq) when keys include a prefix.
int64_t shaw_index(int64_t i, int64_t j, int64_t lq, int64_t lk, int64_t k);
// Key term q_i . a^K_ij for one head: qh [Lq, dh], ak [2k+1, dh] -> [Lq, Lk] (unscaled).
// efficient = seed 001 eq. 5: q . a^K_r once per distance r, then a gather.
Mat shaw_key_term(const Mat& qh, const Mat& ak, int64_t lk, int64_t k, bool efficient);
// Value term sum_j alpha_ij a^V_ij: probs [Lq, Lk], av [2k+1, dv] -> [Lq, dv].
Mat shaw_value_term(const Mat& probs, const Mat& av, int64_t k, bool efficient);

}  // namespace atlas
