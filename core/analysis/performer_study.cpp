#include "core/analysis/performer_study.h"

#include <random>
#include <string>

#include "core/tensor/error.h"

namespace atlas {

FavorStudy favor_error_study(const FavorStudySpec& spec) {
  if (spec.length < 1 || spec.d < 1)
    throw AtlasError("the FAVOR+ study needs a length and a head width of at least 1, got " +
                     std::to_string(spec.length) + " and " + std::to_string(spec.d));
  if (!(spec.sd > 0)) throw AtlasError("the FAVOR+ study needs a standard deviation above 0");
  for (int64_t m : spec.features)
    if (m < 1) throw AtlasError("the FAVOR+ study needs m >= 1 random features, got " + std::to_string(m));
  const int64_t L = spec.length, d = spec.d;
  std::mt19937_64 g(spec.seed);
  std::normal_distribution<float> n(0.0f, static_cast<float>(spec.sd));
  Mat q(L, d), k(L, d);  // [L, d] each
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < d; ++j) {
      q(i, j) = n(g);
      k(i, j) = n(g);
    }
  FavorStudy out;
  out.exact = exact_softmax_attention(q, k, spec.causal);  // [L, L]
  for (int64_t m : spec.features) {
    const Mat w = orthogonal_features(m, d, spec.seed + 1);  // [m, d]
    Mat implicit = favor_implicit_attention(q, k, w, spec.causal);
    out.errors.push_back(attention_error(implicit, out.exact));
    if (m == spec.keep_implicit) out.implicit = std::move(implicit);
  }
  return out;
}

}  // namespace atlas
