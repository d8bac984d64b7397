#include "core/tensor/float_scan.h"

#include <algorithm>
#include <cstring>

namespace atlas {

namespace {

constexpr uint32_t kAbsMask = 0x7fffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;  // |v| >= this: Inf or NaN

FloatScan scan_block(const float* values, int64_t n) {
  uint32_t bad = 0;  // n <= 2^32 per block (scan_floats splits larger arrays)
  uint32_t worst = 0;
  using AliasedBits = uint32_t __attribute__((may_alias));  // the floats' bit patterns
  const AliasedBits* bits = reinterpret_cast<const AliasedBits*>(values);
#pragma omp simd reduction(+ : bad) reduction(max : worst)
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = bits[i] & kAbsMask;
    const uint32_t finite = a < kInfBits;
    bad += 1u - finite;
    worst = std::max(worst, finite ? a : 0u);
  }
  FloatScan s;
  s.non_finite = bad;
  std::memcpy(&s.max_abs, &worst, sizeof worst);
  return s;
}

}  // namespace

FloatScan scan_floats(const float* values, int64_t n) {
  constexpr int64_t kBlock = int64_t{1} << 16;
  if (n <= kBlock) return scan_block(values, n);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  int64_t bad = 0;
  float worst = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(max : worst)
  for (int64_t b = 0; b < blocks; ++b) {
    const FloatScan s = scan_block(values + b * kBlock, std::min(kBlock, n - b * kBlock));
    bad += s.non_finite;
    worst = std::max(worst, s.max_abs);
  }
  return {bad, worst};
}

}  // namespace atlas
