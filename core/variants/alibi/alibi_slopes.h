#pragma once
// ALiBi's per-head slopes and bias (Press, Smith & Lewis 2022, "Train Short, Test Long:
// Attention with Linear Biases", §3): head h = 1..H adds -m_h |i - j| to its scores, with the
// geometric sequence m_h = 2^(-b h / H) (b = bias_max, 8 in the paper) when H is a power of two.
// Otherwise, as the authors' get_slopes (and BLOOM's build_alibi_tensor): with n the largest
// power of two below H, the n slopes of n heads, then every other slope of 2n heads (the 1st,
// 3rd, ...) until there are H: slopes(n) ++ slopes(2n)[0::2][:H - n].
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace atlas {

// The H slopes m_1..m_H (m_h of head index h - 1), H >= 1, bias_max > 0.
std::vector<float> alibi_slopes(int64_t heads, float bias_max);

// The key position j's distance from query row i when the Lq queries are the last Lq of the Lk
// key positions (a cached prefix or memory in front): |i + Lk - Lq - j|.
inline int64_t alibi_distance(int64_t i, int64_t j, int64_t lq, int64_t lk) {
  return std::abs(i + lk - lq - j);
}

// The bias -m d on the score of a key d positions away (float: what every backend adds; the
// Vulkan kernel writes the same product).
inline float alibi_distance_bias(float slope, int64_t d) {
  return -(slope * static_cast<float>(d));
}
// The bias -m |i - j| added to the scaled score of query row i and key j.
inline float alibi_bias(float slope, int64_t i, int64_t j, int64_t lq, int64_t lk) {
  return alibi_distance_bias(slope, alibi_distance(i, j, lq, lk));
}

}  // namespace atlas
