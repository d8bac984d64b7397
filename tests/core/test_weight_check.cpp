// Weights float32 cannot carry and runs that overflowed (core/analysis/weight_check.h): the
// bound against its own argument (a float32 sum of n squares), warnings naming tensor, value
// and index, and a model with huge weights whose NaN/Inf output is reported.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>

#include "core/analysis/weight_check.h"
#include "core/model/model.h"
#include "core/model/params.h"

using namespace atlas;
using Catch::Matchers::Contains;

namespace {

Tensor filled(Shape shape, float v) {
  Tensor t(std::move(shape));
  for (auto& x : t.data) x = v;
  return t;
}

ModelConfig small_encoder() {
  ModelConfig c;
  c.name = "weight-check-test";
  c.architecture = Architecture::Encoder;
  c.d_model = 16;
  c.n_heads = 2;
  c.d_ff = 32;
  c.n_layers = 2;
  c.vocab_size = 256;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.max_positions = 64;
  return c;
}

}  // namespace

TEST_CASE("weight_overflow_bound is sqrt(FLT_MAX / n) for the largest dimension of any tensor", "[weight_check]") {
  ParamStore p;
  p["a"] = filled({3, 7}, 1.0f);
  p["b"] = filled({5}, 1.0f);
  CHECK(weight_overflow_bound(p) == Approx(std::sqrt(3.4028234663852886e38 / 7.0)).epsilon(1e-12));
  p["c"] = filled({768, 2}, 1.0f);
  CHECK(weight_overflow_bound(p) == Approx(6.656e17).epsilon(1e-3));
}

TEST_CASE("the bound is where a float32 sum of n products of two such weights overflows", "[weight_check]") {
  // The argument of weight_check.h, checked with naive float32 loops: n terms of M * M (a
  // LayerNorm variance, an embedding row times a projection) stay finite just below the bound
  // and overflow just above it.
  constexpr int64_t n = 768;
  ParamStore p;
  p["w"] = filled({n, 4}, 1.0f);
  const double bound = weight_overflow_bound(p);
  auto sum_of_squares = [](float m) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i) acc += m * m;
    return acc;
  };
  CHECK(std::isfinite(sum_of_squares(float(bound * 0.99))));
  CHECK(std::isinf(sum_of_squares(float(bound * 1.01))));
}

TEST_CASE("weights above the bound are named with tensor, value and index; others are not", "[weight_check]") {
  ParamStore p;
  p["encoder.layer0.attn.wq"] = filled({2, 3}, 0.5f);
  p["encoder.layer0.attn.wq"].data[4] = -3e20f;  // [1, 1]
  p["encoder.layer0.attn.wk"] = filled({2, 3}, 1e3f);
  p["encoder.layer0.attn.wv"] = filled({2, 3}, std::numeric_limits<float>::infinity());  // check_params' job
  const auto w = check_weight_magnitudes(p, weight_overflow_bound(p));
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Contains("encoder.layer0.attn.wq") && Contains("-3e+20") && Contains("at [1, 1]"));
  CHECK(check_weight_magnitudes(p, 1e30).empty());

  ParamStore many;
  for (int i = 0; i < 6; ++i) many["t" + std::to_string(i)] = filled({2}, 1e25f);
  const auto lines = check_weight_magnitudes(many, weight_overflow_bound(many), 4);
  REQUIRE(lines.size() == 5);
  CHECK_THAT(lines[4], Contains("and 2 more tensors"));
}

TEST_CASE("a model with huge finite weights runs to NaN/Inf and both checks say so", "[weight_check]") {
  const ModelConfig c = small_encoder();
  {
    const Model sane(c, init_params(c, 1));
    CHECK(weight_warnings(sane).empty());
    const RunResult r = sane.run("hello", "", RunOptions{});
    CHECK(count_non_finite(r.output).total() == 0);
    CHECK(output_warnings(r).empty());
  }
  ParamStore params = init_params(c, 1);
  for (auto& [name, t] : params)
    for (auto& x : t.data) x *= 1e20f;  // finite: each |w| < FLT_MAX
  const Model huge(c, params);
  const auto ww = weight_warnings(huge);
  REQUIRE_FALSE(ww.empty());
  CHECK_THAT(ww[0], Contains("weights: tensor ") && Contains("e+") && Contains("float32"));
  const RunResult r = huge.run("hello", "", RunOptions{});
  const NonFiniteCount bad = count_non_finite(r.output);
  REQUIRE(bad.total() > 0);
  const auto ow = output_warnings(r);
  REQUIRE(ow.size() == 1);
  CHECK_THAT(ow[0], Contains(r.is_logits ? "logits" : "hidden states") && Contains("of " + std::to_string(r.output.numel())));
  CHECK_THAT(ow[0], Contains(bad.nan ? "NaN" : "Inf"));
}

TEST_CASE("count_non_finite counts NaN, +Inf and -Inf and finds the first", "[weight_check]") {
  Tensor t({2, 3});
  t.data = {1.0f, std::nanf(""), -INFINITY, 3.0f, INFINITY, std::nanf("")};
  const NonFiniteCount c = count_non_finite(t);
  CHECK(c.nan == 2);
  CHECK(c.pos_inf == 1);
  CHECK(c.neg_inf == 1);
  CHECK(c.first == 1);
  RunResult r;
  r.output = t;
  r.is_logits = true;
  REQUIRE(output_warnings(r).size() == 1);
  CHECK_THAT(output_warnings(r)[0], Contains("2 NaN, 1 +Inf, 1 -Inf of 6 values") && Contains("[0, 1]"));
}
