// Token search (core/analysis/token_search.h): pattern matching over tokenizer labels, and head
// scores against sums worked by hand on made-up maps whose labels repeat.
#include <catch2/catch.hpp>

#include "core/analysis/token_search.h"
#include "core/tensor/error.h"

using namespace atlas;

TEST_CASE("token patterns ignore word-start marks and case; * is a prefix or any token", "[analysis][search]") {
  CHECK(token_matches(" Mary", "mary"));
  CHECK(token_matches("\u2423Mary", "Mary"));
  CHECK(token_matches("\u0120Mary", "MARY"));
  CHECK(token_matches("\u2581Mary", "mary"));
  CHECK_FALSE(token_matches("Maryland", "mary"));
  CHECK(token_matches("Maryland", "mary*"));
  CHECK(token_matches("anything", "*"));
  CHECK_FALSE(token_matches("\u2423", "x"));
  CHECK(token_matches("\u2423", "\u2423"));  // a lone space token is itself
  CHECK(token_matches("##ing", "ing"));        // WordPiece continuation
  CHECK_FALSE(token_matches("\u0120Mary", "mary", /*ignore_case=*/false));  // the corpus queries' rule
  CHECK(token_matches("\u0120Mary", "Mary", false));
}

TEST_CASE("token search scores heads by the attention of matching queries on matching keys", "[analysis][search]") {
  // Tokens: a b a b. Head 0: the second "a" (row 2) puts 0.5 on each "b"... worked out below.
  Trace t;
  for (const char* l : {"a", "b", "a", "b"}) t.source_tokens.push_back({0, l});
  Tensor attn({2, 4, 4});
  const std::vector<float> h0 = {1, 0, 0, 0,  0.5f, 0.5f, 0, 0,  0.2f, 0.3f, 0.1f, 0.4f,  0.25f, 0.25f, 0.25f, 0.25f};
  const std::vector<float> h1 = {1, 0, 0, 0,  1, 0, 0, 0,  0, 1, 0, 0,  0, 0, 1, 0};
  std::copy(h0.begin(), h0.end(), attn.data.begin());
  std::copy(h1.begin(), h1.end(), attn.data.begin() + 16);
  t.add("decoder.layer0.self_attn", "", std::move(attn));
  for (AttentionMap& m : derive_attention_maps(t)) t.describe_attention(std::move(m));
  t.finalize_attention_maps();
  // Queries "a" (rows 0, 2) on keys "b" (columns 1, 3): head 0 rows give 0 and 0.3 + 0.4.
  const auto s = search_token_links(t, "a", "b");
  REQUIRE(s.size() == 2);
  CHECK(s[0].head == 1);  // rows 0 and 2: 0 and 1 -> 0.5, the higher score first
  CHECK(s[0].score == Approx(0.5));
  CHECK(s[0].best_query == 2);
  CHECK(s[0].best_key == 1);
  CHECK(s[0].best_weight == Approx(1.0));
  CHECK(s[1].head == 0);
  CHECK(s[1].score == Approx((0.0 + 0.7) / 2));
  CHECK(s[1].queries == 2);
  CHECK(s[1].best_key == 3);
  // "*" keys: every row's full mass, 1.
  for (const auto& r : search_token_links(t, "b", "*")) CHECK(r.score == Approx(1.0));
  CHECK_THROWS_WITH(search_token_links(t, "zebra", "b"), Catch::Contains("no token of the input matches \"zebra\""));
  CHECK_THROWS_WITH(search_token_links(t, "", "b"), Catch::Contains("give a query and a key pattern"));
  CHECK(matching_tokens(t.source_tokens, "b") == std::vector<int64_t>{1, 3});
}
