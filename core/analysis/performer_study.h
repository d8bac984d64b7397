#pragma once
// How well Performer's FAVOR+ (positive orthogonal random features, core/variants/performer/
// performer.h) approximates exact softmax attention as the number of random features m grows:
// Q and K [L, d] drawn N(0, sd^2) from `seed` (q then k, element by element, row-major), the
// implicit attention rownorm(phi(Q) phi(K)^T) with features drawn from seed + 1, against
// softmax(Q K^T / sqrt(d)) of the same Q, K; per m the mean |A - B| over the L x L matrix and
// the largest row-wise total variation 0.5 sum_j |A_ij - B_ij|. One study for
// `atlas performer-error` (its table) and the app's Performer panel (its matrices and bars).
#include <cstdint>
#include <vector>

#include "core/variants/performer/performer.h"

namespace atlas {

struct FavorStudySpec {
  int64_t length = 256;           // L, >= 1
  int64_t d = 64;                 // the head width, >= 1
  std::vector<int64_t> features;  // the values of m, each >= 1, in the order reported
  double sd = 0.5;                // standard deviation of the entries of Q and K, > 0
  uint64_t seed = 0;              // Q, K from seed; the random features from seed + 1
  bool causal = false;            // query i attends to keys 0..i
  int64_t keep_implicit = -1;     // the m whose implicit matrix is kept (-1: none)
};

struct FavorStudy {
  Mat exact;                        // [L, L] softmax(Q K^T / sqrt(d))
  std::vector<ApproxError> errors;  // one per spec.features, in its order
  Mat implicit;                     // [L, L] at spec.keep_implicit; empty when not asked for
};

// Throws AtlasError naming a length, width, m or sd out of range.
FavorStudy favor_error_study(const FavorStudySpec& spec);

}  // namespace atlas
