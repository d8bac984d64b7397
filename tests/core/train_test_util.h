#pragma once
// Shared by the training tests (tests/core/test_train*.cpp): token lists from ids, and the
// first oracle of every trainable variant, the inference engine itself: the training forward
// on the tape must give Model::forward's logits on the same weights.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model.h"
#include "params.h"
#include "train_model.h"

namespace atlas::train::testing {

inline std::vector<TokenInfo> tokens(const std::vector<int32_t>& ids) {
  std::vector<TokenInfo> t;
  for (int32_t id : ids) t.push_back({id, std::to_string(id)});
  return t;
}

// Largest |training logit - inference logit| (no regularisers, weights from seed 5).
inline double gap_to_inference(const ModelConfig& c, const std::vector<int32_t>& src,
                               const std::vector<int32_t>& tgt) {
  const ParamStore store = init_params(c, 5);
  const Model model(c, store);
  const RunResult ref = model.forward(tokens(src), tokens(tgt), {});
  REQUIRE(ref.is_logits);
  Tape<float> tape;
  const auto r = build_forward<float>(tape, c, to_train_params<float>(store), {src, tgt, {}}, {}, nullptr);
  const MatT<float>& got = tape.value(r.logits);
  REQUIRE(got.rows() == ref.output.shape[0]);
  REQUIRE(got.cols() == ref.output.shape[1]);
  double worst = 0;
  for (int64_t i = 0; i < ref.output.numel(); ++i)
    worst = std::max(worst, double(std::abs(got.data()[i] - ref.output.data[i])));
  return worst;
}

inline void check_same_as_inference(const ModelConfig& c, const std::vector<int32_t>& src,
                                    const std::vector<int32_t>& tgt = {}) {
  CHECK(gap_to_inference(c, src, tgt) < 1e-4);
}

}  // namespace atlas::train::testing
