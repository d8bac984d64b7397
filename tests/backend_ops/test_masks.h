#pragma once
// Masks and sparse patterns the attention tests build their inputs from: the backend-ops
// cases (tests/backend_ops) and the per-op Vulkan tests with naive-loop oracles (tests/gpu).
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/variants/sparse/sparse_pattern.h"

namespace atlas::test_masks {

// [lk] key validity with the keys `hidden` padded out (1 = real token).
inline std::vector<uint8_t> keys_without(int64_t lk, const std::vector<int64_t>& hidden) {
  std::vector<uint8_t> valid(static_cast<size_t>(lk), 1);
  for (int64_t j : hidden) valid[static_cast<size_t>(j)] = 0;
  return valid;
}

// [lq, lk] allowed keys: a band |i + lk - lq - j| <= half_width around each query's position
// with a hole wherever (i + j) % period == 1, so some rows keep one key and none keep all.
inline std::vector<uint8_t> band_with_holes(int64_t lq, int64_t lk, int64_t half_width, int64_t period) {
  std::vector<uint8_t> allowed(static_cast<size_t>(lq * lk), 0);
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j)
      allowed[static_cast<size_t>(i * lk + j)] = std::abs(i + lk - lq - j) <= half_width && (i + j) % period != 1;
  return allowed;
}

// A seeded random CSR pattern of about `density`; every 7th row keeps no key at all.
inline CsrPattern random_pattern(int64_t lq, int64_t lk, double density, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  CsrPattern p;
  p.rows = lq;
  p.cols = lk;
  p.indptr.push_back(0);
  for (int64_t i = 0; i < lq; ++i) {
    if (i % 7 != 3)
      for (int64_t j = 0; j < lk; ++j)
        if (u(gen) < density) p.indices.push_back(int32_t(j));
    p.indptr.push_back(int64_t(p.indices.size()));
  }
  return p;
}

}  // namespace atlas::test_masks
