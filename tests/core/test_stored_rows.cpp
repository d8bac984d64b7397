// The analyses that read stored weights row by row (comparison, token search) give the same
// answers from a sparse map's CSR arrays as from its dense copy: runs of a sparse preset short
// enough to have both are compared with copies of their traces whose dense copies were removed
// (what longer inputs store). And StoredRows refuses CSR arrays that lie.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/analysis/attention_compare.h"
#include "core/analysis/stored_rows.h"
#include "core/analysis/token_search.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"

using namespace atlas;

namespace {

// The trace as a long input stores it: sparse maps as CSR only.
Trace without_dense_copies(const Trace& t) {
  Trace out = t;
  for (AttentionMap& m : out.attention_maps) {
    if (!m.csr || !m.dense) continue;
    m.dense = false;
    const std::string name = m.array, mask = m.companions.mask;
    out.arrays.erase(std::remove_if(out.arrays.begin(), out.arrays.end(),
                                    [&](const TracedArray& a) { return a.name == name || a.name == mask; }),
                     out.arrays.end());
    m.companions.mask.clear();
  }
  return out;
}

}  // namespace

TEST_CASE("comparison and token search read CSR maps as they read dense ones", "[stored-rows][compare][search]") {
  const ModelConfig c = preset_config("tiny-sparse-fixed");
  const Model model(c, init_params(c, 4));
  const RunResult a = model.run("abcab cabca bcabc abcab cabca bcabc", "", RunOptions{});
  const RunResult b = model.run("cabca bcabc abcab cabca bcabc abcab", "", RunOptions{});
  const Trace ca = without_dense_copies(a.trace), cb = without_dense_copies(b.trace);
  int csr_maps = 0;
  for (const AttentionMap& m : ca.attention_maps) csr_maps += m.csr && !m.dense;
  REQUIRE(csr_maps == int(c.n_layers));
  REQUIRE(ca.find("decoder.layer0.self_attn") == nullptr);

  const auto dense = compare_attention(a.trace, b.trace);
  // Both sides CSR, and one dense against one CSR.
  for (const Trace* first : {&ca, &a.trace}) {
    const auto csr = compare_attention(*first, cb);
    REQUIRE(csr.size() == dense.size());
    for (size_t r = 0; r < dense.size(); ++r) {
      CHECK(csr[r].map.array == dense[r].map.array);
      CHECK(csr[r].head == dense[r].head);
      CHECK(csr[r].mean_tv == Approx(dense[r].mean_tv).margin(1e-12));
      CHECK(csr[r].max_abs == Approx(dense[r].max_abs).margin(1e-12));
    }
  }
  CHECK(dense[0].mean_tv > 0);  // the inputs differ
  const Tensor dd = attention_difference(a.trace, b.trace, "decoder.layer1.self_attn", 2);
  const Tensor cd = attention_difference(ca, cb, "decoder.layer1.self_attn", 2);
  CHECK(cd.shape == dd.shape);
  CHECK(cd.data == dd.data);

  const auto ds = search_token_links(a.trace, "a", "b");
  const auto cs = search_token_links(ca, "a", "b");
  REQUIRE(cs.size() == ds.size());
  for (size_t r = 0; r < ds.size(); ++r) {
    CHECK(cs[r].map.array == ds[r].map.array);
    CHECK(cs[r].head == ds[r].head);
    CHECK(cs[r].score == Approx(ds[r].score).margin(1e-12));
    CHECK(cs[r].best_weight == ds[r].best_weight);
    CHECK(cs[r].best_query == ds[r].best_query);
    CHECK(cs[r].best_key == ds[r].best_key);
  }
}

TEST_CASE("StoredRows refuses CSR arrays that do not fit their map", "[stored-rows][errors]") {
  const ModelConfig c = preset_config("tiny-sparse-fixed");
  const RunResult r = Model(c, init_params(c, 4)).run("abcabcabc", "", RunOptions{});
  Trace t = without_dense_copies(r.trace);
  const AttentionMap m = *t.attention_map("decoder.layer0.self_attn");
  CHECK_NOTHROW(StoredRows(t, m));
  auto array = [&](const std::string& name) -> Tensor& {
    for (TracedArray& a : t.arrays)
      if (a.name == name) return a.tensor;
    FAIL("no array " << name);
    throw;
  };
  Tensor& indices = array(m.array + ".indices");
  const float saved = indices.data[0];
  indices.data[0] = float(m.keys.count);  // a key past the last
  CHECK_THROWS_WITH(StoredRows(t, m), Catch::Matchers::Contains("outside"));
  indices.data[0] = saved;
  Tensor& indptr = array(m.array + ".indptr");
  indptr.data[1] = indptr.data[2] + 1;  // row 1 would end before it begins
  CHECK_THROWS_WITH(StoredRows(t, m), Catch::Matchers::Contains("row pointer"));
  AttentionMap none = m;
  none.csr = false;
  CHECK_THROWS_AS(StoredRows(t, none), AtlasError);
}
