// ALiBi's slopes (alibi_slopes.h), Press's rule for any number of heads.
#include "core/variants/alibi/alibi_slopes.h"

#include <cmath>

#include "core/tensor/error.h"

namespace atlas {

namespace {

// m_h = 2^(-b h / n), h = 1..n: the geometric sequence of n heads (n a power of two).
std::vector<double> alibi_power_of_two_slopes(int64_t n, double bias_max) {
  std::vector<double> m(static_cast<size_t>(n));
  for (int64_t h = 1; h <= n; ++h)
    m[static_cast<size_t>(h - 1)] = std::exp2(-bias_max * double(h) / double(n));
  return m;
}

}  // namespace

std::vector<float> alibi_slopes(int64_t heads, float bias_max) {
  if (heads < 1) throw AtlasError("alibi: " + std::to_string(heads) + " heads have no slopes");
  if (!(bias_max > 0.0f))
    throw AtlasError("alibi: bias_max " + std::to_string(bias_max) + " is not > 0");
  int64_t n = 1;  // the largest power of two <= heads
  while (n * 2 <= heads) n *= 2;
  std::vector<double> m = alibi_power_of_two_slopes(n, bias_max);
  if (n < heads) {
    const std::vector<double> twice = alibi_power_of_two_slopes(2 * n, bias_max);
    for (int64_t k = 0; k < heads - n; ++k) m.push_back(twice[static_cast<size_t>(2 * k)]);
  }
  return std::vector<float>(m.begin(), m.end());
}

}  // namespace atlas
