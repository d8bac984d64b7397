// Attention rollout (core/analysis/attention_rollout.h) against products worked by hand from
// Abnar & Zuidema's definition: A~ = (mean_h A + I) / 2, R_l = A~_l R_{l-1}.
#include <catch2/catch.hpp>

#include "core/analysis/attention_rollout.h"
#include "core/tensor/error.h"

using namespace atlas;
using Catch::Matchers::Contains;

namespace {

Tensor heads(std::vector<float> values, int64_t h, int64_t L) {
  Tensor t({h, L, L});
  t.data.assign(values.begin(), values.end());
  return t;
}

}  // namespace

TEST_CASE("attention rollout multiplies the residual-mixed layers, worked by hand", "[rollout]") {
  Trace trace;
  // Layer 0: two heads, the identity and the swap; their mean is [[.5 .5] [.5 .5]].
  trace.add("encoder.layer0.attn", "", heads({1, 0, 0, 1, 0, 1, 1, 0}, 2, 2));
  trace.add("encoder.layer1.attn", "", heads({0.2f, 0.8f, 0, 1}, 1, 2));
  // A~0 = (mean + I) / 2 = [[.75 .25] [.25 .75]].
  const Tensor r0 = attention_rollout(trace, "encoder", 0);
  CHECK(r0.data == std::vector<float>{0.75f, 0.25f, 0.25f, 0.75f});
  // A~1 = [[.6 .4] [0 1]]; R1 = A~1 R0 = [[.6*.75 + .4*.25, .6*.25 + .4*.75], [.25, .75]].
  const Tensor r1 = attention_rollout(trace, "encoder");
  REQUIRE(r1.shape == Shape{2, 2});
  CHECK(r1.data[0] == Approx(0.55));
  CHECK(r1.data[1] == Approx(0.45));
  CHECK(r1.data[2] == Approx(0.25));
  CHECK(r1.data[3] == Approx(0.75));
  CHECK_THROWS_WITH(attention_rollout(trace, "encoder", 2), Contains("2 traced layers"));
  CHECK_THROWS_WITH(attention_rollout(trace, "decoder"), Contains("decoder.layer0.self_attn"));
}
