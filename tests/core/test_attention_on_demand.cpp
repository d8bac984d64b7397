// Attention maps computed on request (core/model/attention_on_demand.h): a run that traces
// queries and keys instead of the maps gives, for every map, head and row, the same weights as
// a run storing them (bit for bit), weights that agree with softmax(q k^T / sqrt(d)) worked in
// double precision, the same output, and the same analyses.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/analysis/head_statistics.h"
#include "core/analysis/stored_rows.h"
#include "core/formats/dump.h"
#include "core/model/attention_on_demand.h"
#include "core/model/memory_budget.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"

using namespace atlas;

namespace {

Model preset_model(const std::string& name) {
  const ModelConfig c = preset_config(name);
  return Model(c, init_params(c, 3));
}

RunResult run_with(const Model& model, const std::string& text, MapStorage maps, int64_t pad_to = 0,
                   const std::string& target = "") {
  RunOptions o;
  o.trace.maps = maps;
  o.pad_to = pad_to;
  return model.run(text, target, o);
}

// A text of n bytes whose tokens repeat (labels repeat: rows must be told apart by position).
std::string text_of(size_t n) {
  std::string t;
  while (t.size() < n) t += "the cat sat on the mat. ";
  return t.substr(0, n);
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// softmax over allowed keys of q_i . k_j * scale, in double, from the traced queries and keys.
std::vector<double> naive_row(const Trace& t, const AttentionMap& m, int64_t h, int64_t i) {
  const Tensor& q = t.find(m.array + ".q")->tensor;
  const Tensor& k = t.find(m.array + ".k")->tensor;
  const int64_t d = q.shape[1] / m.heads, lk = m.keys.count;
  const TracedArray* valid = t.find(m.array + ".key_valid");
  std::vector<double> s(size_t(lk), -INFINITY);
  double mx = -INFINITY;
  for (int64_t j = 0; j < lk; ++j) {
    const bool causal_ok = !m.causal || (j <= i + m.causal_offset && (m.window == 0 || j > i + m.causal_offset - m.window));
    if (!causal_ok || (valid && valid->tensor.data[size_t(j)] == 0.0f)) continue;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += double(q.data[size_t(i * q.shape[1] + h * d + c)]) * double(k.data[size_t(j * k.shape[1] + h * d + c)]);
    s[size_t(j)] = dot * double(m.scale);
    mx = std::max(mx, s[size_t(j)]);
  }
  double sum = 0;
  for (double& v : s) sum += (v = std::isinf(v) ? 0.0 : std::exp(v - mx));
  for (double& v : s) v = sum > 0 ? v / sum : 0.0;
  return s;
}

// Every map of `stored` against the same map of `computed`, whose maps are on request.
void check_same_maps(const Trace& stored, const Trace& computed) {
  REQUIRE(!stored.attention_maps.empty());
  REQUIRE(stored.attention_maps.size() == computed.attention_maps.size());
  for (const AttentionMap& s : stored.attention_maps) {
    INFO(s.array);
    const AttentionMap* c = computed.attention_map(s.array);
    REQUIRE(c);
    REQUIRE(s.dense);
    REQUIRE(c->on_demand);
    CHECK(!c->dense);
    CHECK(computed.find(c->array) == nullptr);          // no [heads, Lq, Lk] array...
    CHECK(computed.find(c->array + ".mask") == nullptr);  // ...nor an [Lq, Lk] mask
    const int64_t lq = s.queries.count, lk = s.keys.count;
    const OnDemandMap od(computed, *c);
    REQUIRE(od.heads() == s.heads);
    const Tensor& dense = stored.find(s.array)->tensor;
    for (int64_t h = 0; h < s.heads; ++h) {
      INFO("head " << h);
      const std::vector<float> rows = od.rows(h, 0, lq);
      CHECK(same_bits(rows.data(), dense.data.data() + h * lq * lk, size_t(lq * lk)));
      // A tile cut anywhere (not on block edges) is the same cells.
      const int64_t r0 = lq / 3, r1 = std::min(lq, r0 + 70), c0 = lk / 5, c1 = std::min(lk, c0 + 33);
      const std::vector<float> tile = od.tile(h, r0, r1, c0, c1);
      bool tile_same = true;
      for (int64_t i = r0; i < r1; ++i)
        tile_same = tile_same && same_bits(&tile[size_t((i - r0) * (c1 - c0))], &dense.data[size_t((h * lq + i) * lk + c0)],
                                           size_t(c1 - c0));
      CHECK(tile_same);
    }
    // The mask rule gives the stored mask.
    if (const TracedArray* mask = stored.find(s.array + ".mask")) {
      int64_t wrong = 0;
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) wrong += od.allowed(i, j) != (mask->tensor.data[size_t(i * lk + j)] != 0.0f);
      CHECK(wrong == 0);
    }
    // Against the paper's equation in double precision, a few rows of head 0 and the last head.
    for (int64_t h : {int64_t(0), s.heads - 1})
      for (int64_t i : {int64_t(0), lq / 2, lq - 1}) {
        const std::vector<double> want = naive_row(computed, *c, h, i);
        const std::vector<float> got = od.rows(h, i, i + 1);
        double err = 0;
        for (int64_t j = 0; j < lk; ++j) err = std::max(err, std::abs(double(got[size_t(j)]) - want[size_t(j)]));
        CHECK(err < 2e-6);
      }
  }
}

}  // namespace

TEST_CASE("on-demand maps equal the stored maps bit for bit, and the output is unchanged", "[on-demand]") {
  struct Case {
    const char* preset;
    size_t length;
    int64_t pad_to;
  };
  // Causal (GPT-2 style), RoPE with grouped-query heads, a sliding window, padding, and an
  // encoder; 150-300 tokens so rows come in several 64-row blocks plus a partial one.
  for (const Case& k : {Case{"tiny-decoder", 150, 0}, Case{"tiny-llama", 200, 0}, Case{"tiny-mistral", 300, 0},
                        Case{"tiny-encoder", 140, 190}, Case{"tiny-ut-fixed", 130, 0}}) {
    INFO(k.preset);
    const Model model = preset_model(k.preset);
    const RunResult stored = run_with(model, text_of(k.length), MapStorage::Stored, k.pad_to);
    const RunResult computed = run_with(model, text_of(k.length), MapStorage::OnDemand, k.pad_to);
    check_same_maps(stored.trace, computed.trace);
    REQUIRE(stored.output.shape == computed.output.shape);
    CHECK(same_bits(stored.output.data.data(), computed.output.data.data(), stored.output.data.size()));
  }
}

TEST_CASE("on-demand maps of an encoder-decoder: self and cross attention", "[on-demand]") {
  const Model model = preset_model("tiny-encoder-decoder");
  const RunResult stored = run_with(model, text_of(140), MapStorage::Stored, 0, text_of(133));
  const RunResult computed = run_with(model, text_of(140), MapStorage::OnDemand, 0, text_of(133));
  check_same_maps(stored.trace, computed.trace);
  bool cross = false;
  for (const AttentionMap& m : computed.trace.attention_maps) cross = cross || m.kind == AttentionMapKind::Cross;
  CHECK(cross);
}

TEST_CASE("on-demand overview: block maxima, head mean and max as the views compute them", "[on-demand]") {
  const Model model = preset_model("tiny-decoder");
  const RunResult stored = run_with(model, text_of(260), MapStorage::Stored);
  const RunResult computed = run_with(model, text_of(260), MapStorage::OnDemand);
  const AttentionMap& s = stored.trace.attention_maps.back();
  const OnDemandMap od(computed.trace, *computed.trace.attention_map(s.array));
  const Tensor& dense = stored.trace.find(s.array)->tensor;
  const int64_t L = s.queries.count, H = s.heads;
  for (int64_t step : {int64_t(1), int64_t(7), int64_t(64)}) {
    std::vector<uint8_t> masked;
    const std::vector<float> got = od.block_max(1, step, step, &masked);
    const int64_t n = (L + step - 1) / step;
    REQUIRE(got.size() == size_t(n * n));
    int64_t wrong = 0;
    for (int64_t bi = 0; bi < n; ++bi)
      for (int64_t bj = 0; bj < n; ++bj) {
        float mx = 0;
        bool any = false;
        for (int64_t i = bi * step; i < std::min(L, (bi + 1) * step); ++i)
          for (int64_t j = bj * step; j < std::min(L, (bj + 1) * step); ++j)
            if (j <= i) {  // causal: allowed keys
              any = true;
              mx = std::max(mx, dense.data[size_t((1 * L + i) * L + j)]);
            }
        wrong += got[size_t(bi * n + bj)] != mx || masked[size_t(bi * n + bj)] != (any ? 0 : 1);
      }
    CHECK(wrong == 0);
  }
  // Mean and max over heads: the sum in head order then divided, and the maximum.
  const std::vector<float> mean = od.rows(OnDemandMap::kMeanOfHeads, 0, L);
  const std::vector<float> most = od.rows(OnDemandMap::kMaxOfHeads, 0, L);
  int64_t wrong = 0;
  for (int64_t t = 0; t < L * L; ++t) {
    float sum = 0, mx = 0;
    for (int64_t h = 0; h < H; ++h) {
      sum += dense.data[size_t(h * L * L + t)];
      mx = std::max(mx, dense.data[size_t(h * L * L + t)]);
    }
    wrong += mean[size_t(t)] != sum / float(H) || most[size_t(t)] != mx;
  }
  CHECK(wrong == 0);
  CHECK_THROWS_WITH(od.rows(H, 0, 1), Catch::Contains("head 4"));
  CHECK_THROWS_WITH(od.tile(0, 0, 1, 0, L + 1), Catch::Contains("outside"));
}

TEST_CASE("on-demand maps: analyses read them like stored maps; dumps keep them", "[on-demand][dump]") {
  const Model model = preset_model("tiny-decoder");
  const RunResult stored = run_with(model, text_of(300), MapStorage::Stored);
  const RunResult computed = run_with(model, text_of(300), MapStorage::OnDemand);
  // StoredRows reads any row, in any order.
  const AttentionMap& m = *computed.trace.attention_map(stored.trace.attention_maps[0].array);
  const StoredRows rows(computed.trace, m), dense(stored.trace, stored.trace.attention_maps[0]);
  for (int64_t i : {int64_t(299), int64_t(0), int64_t(130), int64_t(131), int64_t(7)}) {
    const RowWeights a = rows.row(2, i), b = dense.row(2, i);
    REQUIRE(a.count == b.count);
    CHECK(same_bits(a.weights, b.weights, size_t(a.count)));
  }
  const auto sa = head_statistics(stored.trace), sb = head_statistics(computed.trace);
  REQUIRE(sa.size() == sb.size());
  REQUIRE(!sa.empty());
  for (size_t r = 0; r < sa.size(); ++r) {
    // The same weights; the dense path sums a head's rows in another order (last bits).
    for (int k = 0; k < kHeadStatisticCount; ++k) CHECK(sa[r].value[k] == Approx(sb[r].value[k]).epsilon(1e-9));
  }
  // A dump holds the queries, keys and the rule, and reads back as the same maps.
  const std::string dir = (std::filesystem::temp_directory_path() / "atlas_on_demand_dump").string();
  std::filesystem::remove_all(dir);
  write_trace_dump(dir, "tiny-decoder", computed.trace);
  const TraceDump back = read_trace_dump(dir);
  std::filesystem::remove_all(dir);
  check_same_maps(stored.trace, back.trace);
}

TEST_CASE("on-demand maps: when Auto switches, what the guard counts, bad traces", "[on-demand][memory-budget]") {
  const ModelConfig c = preset_config("tiny-decoder");  // 2 layers x 4 heads: 8 L^2 weights
  TraceOptions t;
  CHECK_FALSE(maps_on_demand(c, t, 5792, 0));  // 8 * 5792^2 < 2^28
  CHECK(maps_on_demand(c, t, 5793, 0));
  t.maps = MapStorage::Stored;
  CHECK_FALSE(maps_on_demand(c, t, 60000, 0));
  t.maps = MapStorage::OnDemand;
  CHECK(maps_on_demand(c, t, 2, 0));
  t.attention = false;
  CHECK_FALSE(maps_on_demand(c, t, 60000, 0));
  // Variants with their own storage never switch.
  for (const char* name : {"tiny-sparse-fixed", "tiny-shaw", "tiny-xl", "tiny-performer", "tiny-span"})
    CHECK_FALSE(maps_on_demand(preset_config(name), TraceOptions{}, 60000, 0));
  // The estimate counts queries and keys, not maps: 2 layers x (q + k) x 16384 x 64 floats.
  ModelConfig long_c = c;
  long_c.max_positions = 16384;
  const RunMemoryEstimate on = estimate_run_memory(long_c, 16384, 0, TraceOptions{});
  CHECK(on.attention_maps == Approx(2.0 * 2 * 16384 * 64 * 4));
  TraceOptions stored;
  stored.maps = MapStorage::Stored;
  CHECK(estimate_run_memory(long_c, 16384, 0, stored).attention_maps > 8.0 * 16384 * 16384 * 4);
  // A trace that lost its keys says so.
  const Model model = preset_model("tiny-decoder");
  RunResult r = run_with(model, "abc", MapStorage::OnDemand);
  const AttentionMap m = r.trace.attention_maps.at(0);
  std::erase_if(r.trace.arrays, [&](const TracedArray& a) { return a.name == m.array + ".k"; });
  CHECK_THROWS_WITH(OnDemandMap(r.trace, m), Catch::Contains(m.array + ".k"));
}
