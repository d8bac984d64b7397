// Head statistics (core/analysis/head_statistics.h) against values worked by hand on
// made-up attention patterns, the CSR path against the dense one, and the trained
// demo:induction model, whose strongest induction head must be the one that attends, on the
// repeated half, to the token after the query's earlier copy (TransformerLens's diagonal read
// straight from the traced map).
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "core/analysis/head_statistics.h"
#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

double stat(const double* v, HeadStatistic s) { return v[static_cast<int>(s)]; }

std::vector<float> attention_rows(int64_t L,
                                  const std::vector<std::vector<std::pair<int, float>>>& rows) {
  std::vector<float> p(size_t(L * L), 0.0f);
  for (int64_t i = 0; i < L; ++i)
    for (auto [j, w] : rows[size_t(i)]) p[size_t(i * L + j)] = w;
  return p;
}

}  // namespace

TEST_CASE("head statistics of made-up heads, worked by hand", "[analysis][heads]") {
  double v[kHeadStatisticCount];
  const std::vector<int32_t> tokens = {5, 6, 7, 5, 6, 7};
  const MapRows six{6, 6, 0, 0};
  SECTION("a pure previous-token head") {
    const auto p = attention_rows(
        6, {{{0, 1.0f}}, {{0, 1.0f}}, {{1, 1.0f}}, {{2, 1.0f}}, {{3, 1.0f}}, {{4, 1.0f}}});
    map_head_statistics(p.data(), six, tokens, v);
    CHECK(stat(v, HeadStatistic::PreviousToken) == Approx(1.0));
    CHECK(stat(v, HeadStatistic::Entropy) == Approx(0.0));
    CHECK(stat(v, HeadStatistic::Distance) == Approx(5.0 / 6.0));  // row 0 sees itself
    CHECK(stat(v, HeadStatistic::Sink) == Approx(2.0 / 6.0));      // rows 0 and 1
    CHECK(stat(v, HeadStatistic::Induction) == Approx(0.0));
    CHECK(stat(v, HeadStatistic::DuplicateToken) == Approx(0.0));
  }
  SECTION("uniform causal attention") {
    std::vector<std::vector<std::pair<int, float>>> rows(4);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j <= i; ++j) rows[size_t(i)].push_back({j, 1.0f / float(i + 1)});
    const auto p = attention_rows(4, rows);
    map_head_statistics(p.data(), {4, 4, 0, 0}, {1, 2, 3, 4}, v);
    CHECK(stat(v, HeadStatistic::Entropy) == Approx((std::log(2.0) + std::log(3.0) + std::log(4.0)) / 4));
    CHECK(stat(v, HeadStatistic::Distance) == Approx((0 + 0.5 + 1 + 1.5) / 4));
    CHECK(stat(v, HeadStatistic::Sink) == Approx((1 + 0.5 + 1.0 / 3 + 0.25) / 4));
    CHECK(stat(v, HeadStatistic::PreviousToken) == Approx((0.5 + 1.0 / 3 + 0.25) / 3));
  }
  SECTION("an induction head and a duplicate-token head on a repeated sequence") {
    // Rows 0-2 attend to themselves; rows 3-5 (5 6 7 again) to the token after the earlier copy.
    const auto ind = attention_rows(
        6, {{{0, 1.0f}}, {{1, 1.0f}}, {{2, 1.0f}}, {{1, 1.0f}}, {{2, 1.0f}}, {{3, 1.0f}}});
    map_head_statistics(ind.data(), six, tokens, v);
    CHECK(stat(v, HeadStatistic::Induction) == Approx(1.0));  // rows 3-5 are the rows with a candidate
    CHECK(stat(v, HeadStatistic::DuplicateToken) == Approx(0.0));
    const auto dup = attention_rows(
        6, {{{0, 1.0f}}, {{1, 1.0f}}, {{2, 1.0f}}, {{0, 1.0f}}, {{1, 1.0f}}, {{2, 1.0f}}});
    map_head_statistics(dup.data(), six, tokens, v);
    CHECK(stat(v, HeadStatistic::DuplicateToken) == Approx(1.0));
    CHECK(stat(v, HeadStatistic::Induction) == Approx(0.0));
  }
  SECTION("positions: queries and keys placed in the token list (a segment over memory)") {
    // Two queries at positions 4, 5 over keys at positions 2..5: each on the key one back.
    const std::vector<float> p = {0, 1, 0, 0,   // query pos 4 -> key pos 3
                                  0, 0, 1, 0};  // query pos 5 -> key pos 4
    map_head_statistics(p.data(), {2, 4, 4, 2}, tokens, v);
    CHECK(stat(v, HeadStatistic::PreviousToken) == Approx(1.0));
    CHECK(stat(v, HeadStatistic::Distance) == Approx(1.0));
    CHECK(stat(v, HeadStatistic::Sink) == Approx(0.0));  // nothing on the map's first key
  }
  SECTION("rows that see no key are left out") {
    const auto p = attention_rows(2, {{}, {{0, 1.0f}}});
    map_head_statistics(p.data(), {2, 2, 0, 0}, {1, 2}, v);
    CHECK(stat(v, HeadStatistic::Sink) == Approx(1.0));
    CHECK(stat(v, HeadStatistic::PreviousToken) == Approx(1.0));
  }
}

TEST_CASE("head statistics read CSR maps like dense ones", "[analysis][heads]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-sparse-strided");
  const Model model(c, init_params(c, 3));
  const Trace t = model.run("abcabcabcabcabcabcabc", "", RunOptions{}).trace;
  const auto dense = head_statistics(t);
  Trace csr_only = t;
  int switched = 0;
  for (AttentionMap& m : csr_only.attention_maps)
    if (m.csr && m.dense) {
      m.dense = false;
      ++switched;
    }
  REQUIRE(switched > 0);
  const auto sparse = head_statistics(csr_only);
  REQUIRE(sparse.size() == dense.size());
  for (size_t r = 0; r < dense.size(); ++r)
    for (int s = 0; s < kHeadStatisticCount; ++s) CHECK(sparse[r].value[s] == Approx(dense[r].value[s]).margin(1e-9));
}

TEST_CASE("demo:induction's strongest induction head is the one on TransformerLens's diagonal",
          "[analysis][heads]") {
  const Model model = load_model("demo:induction");
  const std::string half = "qwertyuiopzx";  // 12 distinct letters, the trained length
  const RunResult r = model.run(half + half, "", RunOptions{});
  const auto rows = head_statistics(r.trace);
  const HeadStatisticsRow* best = nullptr;
  for (const auto& row : rows)
    if (!best || row[HeadStatistic::Induction] > (*best)[HeadStatistic::Induction]) best = &row;
  REQUIRE(best);
  // The oracle: mean over the second half of p[i][i - (n - 1)], per head, from the arrays.
  const int64_t n = 12, L = 24;
  double best_diag = -1;
  std::string best_map;
  int64_t best_head = -1;
  for (const AttentionMap& m : r.trace.attention_maps) {
    const Tensor& p = r.trace.find(m.array)->tensor;
    for (int64_t h = 0; h < m.heads; ++h) {
      double s = 0;
      for (int64_t i = n; i < L; ++i) s += p.data[size_t((h * L + i) * L + (i - n + 1))];
      if (s / double(n) > best_diag) {
        best_diag = s / double(n);
        best_map = m.array;
        best_head = h;
      }
    }
  }
  CHECK(best->map.array == best_map);
  CHECK(best->head == best_head);
  CHECK((*best)[HeadStatistic::Induction] > 0.5);  // a trained induction model
  CHECK(best_diag > 0.5);
}

TEST_CASE("the induction probe is n random ids repeated", "[analysis][heads]") {
  const auto ids = induction_probe_tokens(7, 3, 50, 11);
  REQUIRE(ids.size() == 14);
  for (size_t i = 0; i < 7; ++i) {
    CHECK(ids[i] == ids[i + 7]);
    CHECK(ids[i] >= 3);
    CHECK(ids[i] < 50);
  }
  CHECK(ids == induction_probe_tokens(7, 3, 50, 11));  // seeded
  CHECK_THROWS(induction_probe_tokens(1, 0, 10, 1));
}
