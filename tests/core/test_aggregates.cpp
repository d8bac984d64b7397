// Aggregates beside rollout: attention flow (core/analysis/attention_flow.h) against the
// max-flow min-cut theorem, with every cut of a small layered graph enumerated here, and value
// norms (core/analysis/value_weighted.h) against |W^O_h v_j| computed with plain loops from the
// parameters.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/attention_flow.h"
#include "core/analysis/attention_rollout.h"
#include "core/analysis/value_weighted.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "tests/core/naive_layer_input.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

// Row-stochastic [L, L] with some zeros (masked keys), like a residual-mixed attention layer.
Tensor random_layer(int64_t L, Rng& rng, bool causal) {
  Tensor t({L, L});
  for (int64_t i = 0; i < L; ++i) {
    double s = 0;
    for (int64_t j = 0; j < L; ++j) {
      const bool allowed = !causal || j <= i;
      t.data[size_t(i * L + j)] = allowed ? float(0.05 + rng.uniform()) : 0.0f;
      s += t.data[size_t(i * L + j)];
    }
    for (int64_t j = 0; j < L; ++j) t.data[size_t(i * L + j)] = float(t.data[size_t(i * L + j)] / s);
  }
  return t;
}

// The minimum over every cut that separates input j (level 0) from output i (level n) of the
// capacity leaving the source side: S holds the source, any subset of the middle levels and
// the other outputs (they have no outgoing edges, so holding them never adds capacity).
double min_cut(const std::vector<Tensor>& layers, int64_t i, int64_t j) {
  const int64_t n = int64_t(layers.size()), L = layers[0].shape[0], middle = (n - 1) * L;
  double best = 1e300;
  for (int64_t subset = 0; subset < (int64_t(1) << middle); ++subset) {
    auto in_s = [&](int64_t level, int64_t token) {
      if (level == 0) return token == j;
      if (level == n) return token != i;
      return ((subset >> ((level - 1) * L + token)) & 1) != 0;
    };
    double cut = 0;
    for (int64_t l = 0; l < n; ++l)  // edges from level l token b to level l + 1 token a
      for (int64_t a = 0; a < L; ++a)
        for (int64_t b = 0; b < L; ++b)
          if (in_s(l, b) && !in_s(l + 1, a)) cut += layers[size_t(l)].data[size_t(a * L + b)];
    best = std::min(best, cut);
  }
  return best;
}

}  // namespace

TEST_CASE("attention flow equals the minimum cut of the layered graph", "[analysis][flow]") {
  Rng rng(7);
  SECTION("one layer: the flow is the capacity of the one edge") {
    const Tensor a = random_layer(4, rng, false);
    const Tensor f = attention_flow({a});
    for (size_t k = 0; k < a.data.size(); ++k) CHECK(f.data[k] == Approx(a.data[k]).margin(1e-9));
  }
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    const std::vector<Tensor> layers = {random_layer(3, rng, causal), random_layer(3, rng, causal),
                                        random_layer(3, rng, causal)};
    const Tensor f = attention_flow(layers);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        CAPTURE(i, j);
        CHECK(f.data[size_t(i * 3 + j)] == Approx(min_cut(layers, i, j)).margin(1e-6));
      }
    // Chosen rows: the same numbers, the others not computed.
    const Tensor one = attention_flow(layers, {1});
    for (int64_t j = 0; j < 3; ++j) {
      CHECK(one.data[size_t(3 + j)] == f.data[size_t(3 + j)]);
      CHECK(std::isnan(one.data[size_t(j)]));
    }
  }
  CHECK_THROWS_WITH(attention_flow({Tensor({2, 2}), Tensor({3, 3})}), Catch::Contains("same L"));
  CHECK_THROWS_WITH(attention_flow({Tensor({2, 2})}, {5}), Catch::Contains("outside"));
}

TEST_CASE("attention flow of a run: the residual layers rollout uses, and a limit on full matrices", "[analysis][flow]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-encoder");
  const Model model(c, init_params(c, 3));
  const RunResult r = model.run("flow!", "", RunOptions{});
  const std::vector<Tensor> layers = residual_attention(r.trace, "encoder");
  REQUIRE(layers.size() == 2);
  const Tensor f = attention_flow(r.trace, "encoder");
  const Tensor direct = attention_flow(layers);
  CHECK(f.data == direct.data);
  // No flow exceeds what can arrive at an output token: its row of capacities sums to 1.
  for (float v : f.data) {
    CHECK(v >= 0.0f);
    CHECK(v <= 1.0f + 1e-5f);
  }
  const RunResult longer = model.run(std::string(60, 'x'), "", RunOptions{});
  CHECK_THROWS_WITH(attention_flow(longer.trace, "encoder"), Catch::Contains("60 tokens"));
  const Tensor row = attention_flow(longer.trace, "encoder", -1, {0});
  CHECK(std::isfinite(row.data[0]));
  CHECK(std::isnan(row.data[60]));
}

TEST_CASE("value norms are |W^O_h v_j| of the run's values, computed by hand", "[analysis][value-weighted]") {
  ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  c.positional = Positional::Sinusoidal;
  const ParamStore p = init_params(c, 12);
  const Model model(c, p);
  const auto [src, tgt] = model.tokenize("value norms", "");
  RunOptions o;
  o.trace.value_norms = true;
  const RunResult r = model.forward(src, tgt, o);
  const AttentionMap* map = r.trace.attention_map("decoder.layer0.self_attn");
  REQUIRE(map);
  const std::vector<double> v = naive::layer0_values(c, p, src, r.trace.find("positional")->tensor);
  const Tensor& wo = p.at("decoder.layer0.self_attn.wo");
  const int64_t L = int64_t(src.size()), d = c.d_model, dh = c.d_head();
  for (int64_t h = 0; h < c.n_heads; ++h) {
    const std::vector<float> got = value_norms(r.trace, *map, h);
    REQUIRE(int64_t(got.size()) == L);
    for (int64_t j = 0; j < L; ++j) {
      double sq = 0;
      for (int64_t o2 = 0; o2 < d; ++o2) {
        double f = 0;
        for (int64_t e = 0; e < dh; ++e) f += double(wo.data[size_t(o2 * d + h * dh + e)]) * v[size_t(j * d + h * dh + e)];
        sq += f * f;
      }
      CHECK(got[size_t(j)] == Approx(std::sqrt(sq)).epsilon(1e-4));
    }
  }
  CHECK_THROWS_WITH(value_norms(r.trace, *map, 9), Catch::Contains("head 9"));
  const RunResult plain = model.forward(src, tgt, RunOptions{});
  CHECK_THROWS_WITH(value_norms(plain.trace, *plain.trace.attention_map("decoder.layer0.self_attn"), 0),
                    Catch::Contains("--value-norms"));
  SECTION("Transformer-XL: keys are memory + segment") {
    const ModelConfig xc = preset_test::small_preset_config("tiny-xl");
    const Model xl(xc, init_params(xc, 1));
    const RunResult xr = xl.run(std::string(40, 'a'), "", o);
    const AttentionMap* seg1 = xr.trace.attention_map("decoder.seg1.layer0.self_attn");
    REQUIRE(seg1);
    CHECK(int64_t(value_norms(xr.trace, *seg1, 0).size()) == seg1->keys.count);
  }
}
