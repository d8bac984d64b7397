#pragma once
// The adaptive-span soft mask, one formula for the inference op, the trace summaries and the
// training tape (Sukhbaatar et al. 2019, seed 000):
//   m_z(x) = clamp((R + z - (x - o)) / R, 0, 1),   0 when x > S,
// x the query-key distance, R the ramp, S the maximum span, and o the distance convention:
// 0 for the paper's m_z(i - j); 1 for facebookresearch/adaptive-span, whose keys are the S
// previous tokens with the nearest (distance 1) at the top of the ramp, so its ramp ends one
// step farther away (SpanDistance, core/variants/adaptive_span/adaptive_span_config.h).
#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace atlas {

template <class S>
S span_mask_at(S z, int64_t x, int64_t ramp, int64_t max_span, int64_t offset) {
  if (x > max_span) return S(0);
  const S r = S(ramp);
  return std::clamp((r + z - S(x - offset)) / r, S(0), S(1));
}

// dm/dz: 1/R strictly inside the ramp, else 0 (the clamp passes no gradient).
template <class S>
S span_mask_slope_at(S z, int64_t x, int64_t ramp, int64_t max_span, int64_t offset) {
  if (x > max_span) return S(0);
  const S u = (S(ramp) + z - S(x - offset)) / S(ramp);
  return u > S(0) && u < S(1) ? S(1) / S(ramp) : S(0);
}

// The query-key distance the mask sees, queries being the last lq of lk key positions: i - j
// for causal stacks, |i - j| otherwise.
inline int64_t span_distance(int64_t i, int64_t j, int64_t lq, int64_t lk) {
  return std::abs(i + (lk - lq) - j);
}

}  // namespace atlas
