// Comparing two runs' attention (core/analysis/attention_compare.h): the total variation and
// largest difference per head against values worked by hand on made-up maps, the [layers,
// heads] tables by position, the refusal of maps of other sizes naming both shapes, and real
// runs (a model against itself: zero everywhere; two inputs: A - B equals the traced maps
// subtracted here).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/attention_compare.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

Trace one_map_trace(int64_t heads, int64_t n, std::vector<float> values, int64_t layer = 0) {
  Trace t;
  for (int64_t i = 0; i < n; ++i) t.source_tokens.push_back({int32_t(i), std::string(1, char('a' + i))});
  Tensor a({heads, n, n});
  a.data.assign(values.begin(), values.end());
  t.add("decoder.layer" + std::to_string(layer) + ".self_attn", "", std::move(a));
  for (AttentionMap& m : derive_attention_maps(t)) t.describe_attention(std::move(m));
  t.finalize_attention_maps();
  return t;
}

}  // namespace

TEST_CASE("attention compare: total variation and largest difference worked by hand", "[analysis][compare]") {
  // Head 0: rows [1, 0], [0.5, 0.5] against [0, 1], [0.5, 0.5]: TV rows 1 and 0, mean 0.5; max 1.
  // Head 1: rows [1, 0], [0.25, 0.75] against [1, 0], [0.75, 0.25]: TV rows 0 and 0.5, mean 0.25.
  const Trace a = one_map_trace(2, 2, {1, 0, 0.5f, 0.5f, 1, 0, 0.25f, 0.75f});
  const Trace b = one_map_trace(2, 2, {0, 1, 0.5f, 0.5f, 1, 0, 0.75f, 0.25f});
  const auto rows = compare_attention(a, b);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].head == 0);
  CHECK(rows[0].mean_tv == Approx(0.5));
  CHECK(rows[0].max_abs == Approx(1.0));
  CHECK(rows[1].mean_tv == Approx(0.25));
  CHECK(rows[1].max_abs == Approx(0.5));
  const auto tables = head_difference_tables(rows);
  REQUIRE(tables.size() == 1);
  CHECK(tables[0].name == "decoder.self_attn");
  CHECK(tables[0].layers == 1);
  CHECK(tables[0].heads == 2);
  CHECK(tables[0].values == std::vector<double>{0.5, 0.25});
  const Tensor d = attention_difference(a, b, "decoder.layer0.self_attn", 1);
  CHECK(d.data == std::vector<float>{0, 0, -0.5f, 0.5f});
  CHECK_THROWS_WITH(attention_difference(a, b, "decoder.layer0.self_attn", 2), Catch::Contains("head 2 does not exist"));
  // Identical runs: zero.
  for (const auto& r : compare_attention(a, a)) CHECK(r.mean_tv == 0.0);
}

TEST_CASE("attention compare refuses maps of other sizes, naming both shapes", "[analysis][compare]") {
  const Trace a = one_map_trace(1, 2, {1, 0, 0.5f, 0.5f});
  const Trace b = one_map_trace(1, 3, {1, 0, 0, 0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f});
  CHECK_THROWS_WITH(compare_attention(a, b), Catch::Contains("1 x 2 x 2 in A but 1 x 3 x 3 in B") &&
                                                 Catch::Contains("same number of tokens"));
  CHECK_THROWS_WITH(attention_difference(a, b, "decoder.layer0.self_attn", 0), Catch::Contains("same number of tokens"));
  const Trace other_layer = one_map_trace(1, 2, {1, 0, 0.5f, 0.5f}, 3);
  CHECK_THROWS_WITH(compare_attention(a, other_layer), Catch::Contains("no attention map in common"));
}

TEST_CASE("attention compare on real runs: two inputs of one model, one model against itself", "[analysis][compare]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-encoder-decoder");
  const Model model(c, init_params(c, 4));
  const RunResult a = model.run("abcd", "wxyz", RunOptions{});
  const RunResult same = model.run("abcd", "wxyz", RunOptions{});
  for (const auto& r : compare_attention(a.trace, same.trace)) CHECK(r.mean_tv == 0.0);
  const RunResult b = model.run("abce", "wxyz", RunOptions{});
  const auto rows = compare_attention(a.trace, b.trace);
  // Encoder self, decoder self and cross attention, 2 layers each, 4 heads.
  CHECK(rows.size() == 3 * 2 * 4);
  double largest = 0;
  for (const auto& r : rows) {
    CHECK(r.mean_tv >= 0.0);
    CHECK(r.mean_tv <= 1.0 + 1e-6);
    largest = std::max(largest, r.mean_tv);
    // The reported distance from the traced maps, recomputed here.
    const Tensor& ta = a.trace.find(r.map.array)->tensor;
    const Tensor& tb = b.trace.find(r.map.array)->tensor;
    const int64_t lq = ta.shape[1], lk = ta.shape[2];
    double tv = 0;
    for (int64_t i = 0; i < lq; ++i) {
      double row = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const size_t at = size_t((r.head * lq + i) * lk + j);
        row += std::fabs(double(ta.data[at]) - double(tb.data[at]));
      }
      tv += 0.5 * row / double(lq);
    }
    CHECK(r.mean_tv == Approx(tv));
  }
  CHECK(largest > 1e-3);
}
