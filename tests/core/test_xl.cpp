// Transformer-XL (core/variants/transformer_xl/transformer_xl.cpp) against an independent naive-loop oracle written
// here from the equation of REFERENCES.md: a causal relative model over the whole text,
//   A_ij = [(q_i + u).k_j + (q_i + v).(W_kR R_{i-j})] / sqrt(d_head),
// which the segment recurrence must reproduce when memory covers the previous segment.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/qk_embedding.h"
#include "core/analysis/score_compare.h"
#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/naive_xl.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/variants/transformer_xl/transformer_xl.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

ModelConfig xl_config(NormPosition np, int64_t seg, int64_t mem) { return naive::xl_test_config(np, seg, mem); }

naive::Matrix xl_oracle(const ModelConfig& c, const ParamStore& p, const std::vector<int>& ids) {
  return naive::xl_whole_text(c, p, ids).logits;
}

void require_rows_close(const Tensor& got, size_t row0, const naive::Matrix& want, size_t want0,
                        size_t rows, double tol) {
  const size_t V = size_t(got.shape[1]);
  for (size_t i = 0; i < rows; ++i)
    for (size_t t = 0; t < V; ++t) REQUIRE(got.data[(row0 + i) * V + t] == Approx(want[want0 + i][t]).margin(tol));
}

const std::vector<int> kXlIds = {3, 17, 5, 9, 30, 1, 12, 7};

}  // namespace

TEST_CASE("xl helpers: causal, same_length window and clamp by hand", "[xl]") {
  // p = 5 with mem_len 2 and same_length: keys 4 and 5 only.
  for (int64_t j = 0; j <= 7; ++j) {
    CHECK(xl_key_visible(5, j, 2, true) == (j == 4 || j == 5));
    CHECK(xl_key_visible(5, j, 2, false) == (j <= 5));
  }
  CHECK(xl_distance(5, 0, -1) == 5);
  CHECK(xl_distance(5, 0, 3) == 3);
  CHECK(xl_distance(5, 4, 3) == 1);
  CHECK(xl_distance(5, 5, 0) == 0);
  CHECK(xl_distance(5, 0, 0) == 5);  // clamp_len 0 clamps nothing, as in the reference
  ModelConfig c = xl_config(NormPosition::Post, 4, 4);
  CHECK(xl_segments(c, 8) == 2);
  CHECK(xl_segments(c, 9) == 3);
}

TEST_CASE("xl with mem_len 0 equals independent runs of the segments", "[xl]") {
  for (NormPosition np : {NormPosition::Post, NormPosition::Pre}) {
    ModelConfig c = xl_config(np, 4, 0);
    ParamStore p = init_params(c, 11);
    Model m(c, p);
    RunOptions o;
    const Tensor both = m.forward(tokens(kXlIds), {}, o).output;
    const std::vector<int> a(kXlIds.begin(), kXlIds.begin() + 4),
        b(kXlIds.begin() + 4, kXlIds.end());
    const Tensor ra = m.forward(tokens(a), {}, o).output, rb = m.forward(tokens(b), {}, o).output;
    REQUIRE(both.shape == Shape{8, 256});
    for (size_t k = 0; k < 4 * 256; ++k) {
      REQUIRE(both.data[k] == Approx(ra.data[k]).margin(1e-5));
      REQUIRE(both.data[4 * 256 + k] == Approx(rb.data[k]).margin(1e-5));
    }
  }
}

TEST_CASE("xl with memory matches a naive causal relative model over the whole text", "[xl]") {
  struct Case { NormPosition np; int64_t mem, clamp; bool same; };
  for (Case k : {Case{NormPosition::Post, 4, -1, false}, Case{NormPosition::Pre, 6, -1, false},
                 Case{NormPosition::Post, 4, 2, false}, Case{NormPosition::Pre, 4, -1, true},
                 Case{NormPosition::Post, 3, 1, true}, Case{NormPosition::Pre, 4, 0, false}}) {
    ModelConfig c = xl_config(k.np, 4, k.mem);
    c.xl()->clamp_len = k.clamp;
    c.xl()->same_length = k.same;
    ParamStore p = init_params(c, 5);
    // Non-zero u, v and biases so every term is exercised.
    for (auto& [name, t] : p)
      if (name.find(".b") != std::string::npos && t.shape.size() == 1)
        for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.1f * float(i % 5) - 0.2f;
    Model m(c, p);
    RunOptions o;
    const RunResult r = m.forward(tokens(kXlIds), {}, o);
    const naive::Matrix want = xl_oracle(c, p, kXlIds);
    INFO("mem " << k.mem << " clamp " << k.clamp << " same " << k.same);
    // With mem_len >= segment length (or the window inside memory) the whole text matches.
    require_rows_close(r.output, 0, want, 0, 8, 1e-4);
  }
}

TEST_CASE("xl traces: rows sum to 1, terms add up to the scores, key segments", "[xl]") {
  ModelConfig c = xl_config(NormPosition::Post, 4, 4);
  ParamStore p = init_params(c, 2);
  Model m(c, p);
  RunOptions o;
  o.trace = TraceOptions::all();
  const std::vector<int> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // segments of 4, 4, 2
  const RunResult r = m.forward(tokens(ids), {}, o);
  REQUIRE(r.output.shape == Shape{10, 256});
  const TracedArray* a = r.trace.find("decoder.seg2.layer1.self_attn");
  REQUIRE(a);
  REQUIRE(a->tensor.shape == Shape{2, 2, 6});
  const TracedArray* s1 = r.trace.find("decoder.seg1.layer0.self_attn");
  REQUIRE(s1);
  REQUIRE(s1->tensor.shape == Shape{2, 4, 8});
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 4; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < 8; ++j) {
        const float v = s1->tensor.data[size_t((h * 4 + i) * 8 + j)];
        if (j > 4 + i) REQUIRE(v == 0.0f);  // causal beyond the query's own position
        sum += v;
      }
      REQUIRE(sum == Approx(1.0).margin(1e-5));
    }
  const TracedArray* sc = r.trace.find("decoder.seg1.layer0.self_attn.scores");
  REQUIRE(sc);
  std::vector<const TracedArray*> t;
  for (const char* n : {"a", "b", "c", "d"}) {
    t.push_back(r.trace.find(std::string("xl.seg1.layer0.terms.") + n));
    REQUIRE(t.back());
    REQUIRE(t.back()->tensor.shape == Shape{2, 4, 8});
  }
  for (size_t e = 0; e < sc->tensor.data.size(); ++e)
    if (std::isfinite(sc->tensor.data[e]))
      REQUIRE(sc->tensor.data[e] == Approx(t[0]->tensor.data[e] + t[1]->tensor.data[e] +
                                         t[2]->tensor.data[e] + t[3]->tensor.data[e]).margin(1e-5));
  const TracedArray* ks = r.trace.find("xl.seg2.key_segment");
  REQUIRE(ks);
  REQUIRE(ks->tensor.shape == Shape{6});
  const std::vector<float> want = {1, 1, 1, 1, 2, 2};
  for (size_t j = 0; j < 6; ++j) REQUIRE(ks->tensor.data[j] == want[j]);
}

TEST_CASE("xl traces its content queries and keys: term (a) is their scaled dot product; the query-key embedding reads them",
          "[xl][qk]") {
  ModelConfig c = xl_config(NormPosition::Pre, 4, 4);
  Model m(c, init_params(c, 4));
  RunOptions o;
  o.trace = TraceOptions::none();
  o.trace.attention = o.trace.scores = o.trace.qk = true;
  const RunResult r = m.forward(tokens({3, 1, 4, 1, 5, 9, 2, 6, 5, 3}), {}, o);
  const TracedArray* q = r.trace.find("decoder.seg1.layer1.self_attn.q");
  const TracedArray* k = r.trace.find("decoder.seg1.layer1.self_attn.k");
  const TracedArray* a = r.trace.find("xl.seg1.layer1.terms.a");
  REQUIRE((q && k && a));
  REQUIRE(q->tensor.shape == Shape{4, 8});  // this segment's 4 queries, 2 heads of 4
  REQUIRE(k->tensor.shape == Shape{8, 8});  // 4 memory keys, then the segment's 4
  const double scale = 1.0 / std::sqrt(4.0);
  int checked = 0;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j <= 4 + i; ++j) {  // the keys query i sees
        double dot = 0;
        for (int64_t e = 0; e < 4; ++e)
          dot += double(q->tensor.data[size_t(i * 8 + h * 4 + e)]) * k->tensor.data[size_t(j * 8 + h * 4 + e)];
        CHECK(dot * scale == Approx(a->tensor.data[size_t((h * 4 + i) * 8 + j)]).margin(1e-5));
        ++checked;
      }
  CHECK(checked == 2 * (5 + 6 + 7 + 8));
  const QkEmbedding e = qk_embedding(r.trace, "decoder.seg1.layer1.self_attn", 1);
  CHECK(e.queries == 4);
  CHECK(e.keys == 8);
  // The score-function comparison recomputes the shared attention's score from q and k; XL's
  // score has terms of its own, so it refuses rather than compare a part of it.
  CHECK_THROWS_WITH(compare_score_functions(m, r.trace, "", 0, 0, 1.0f), Catch::Contains("xl layers run their own attention"));
}

TEST_CASE("xl config: bad values are rejected naming the key", "[xl][config]") {
  auto rejects = [](ModelConfig c, const std::string& key) {
    try {
      validate_config(c, "t");
    } catch (const AtlasError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(key) != std::string::npos);
      return;
    }
    FAIL("accepted a bad " << key);
  };
  ModelConfig c = xl_config(NormPosition::Post, 4, 4);
  REQUIRE_NOTHROW(validate_config(c, "t"));
  ModelConfig b = c;
  b.xl()->mem_len = -1;
  rejects(b, "xl.mem_len");
  b = c;
  b.xl()->mem_len = 1'000'000;
  rejects(b, "xl.mem_len");
  b = c;
  b.xl()->segment_length = 0;
  rejects(b, "xl.segment_length");
  b = c;
  b.xl()->clamp_len = -2;
  rejects(b, "xl.clamp_len");
  b = c;
  b.xl()->mem_len = 0;
  b.xl()->same_length = true;
  rejects(b, "xl.same_length");
  b = c;
  b.positional = Positional::Sinusoidal;
  rejects(b, "xl.enabled");
  // Through the parser: the key is named with its section.
  std::string json = config_to_json(c);
  const auto at = json.find("\"mem_len\": 4");
  REQUIRE(at != std::string::npos);
  json.replace(at, 12, "\"mem_len\": -3");
  try {
    parse_config(json, "x.json");
    FAIL("parsed a negative mem_len");
  } catch (const AtlasError& e) {
    CHECK(std::string(e.what()).find("xl.mem_len") != std::string::npos);
  }
}

TEST_CASE("xl presets parse and tiny-xl runs two segments", "[xl][presets]") {
  const ModelConfig base = preset_config("transformer-xl-base");
  CHECK(base.n_layers == 16);
  CHECK(base.d_model == 410);
  CHECK(base.d_head() == 41);
  CHECK(base.d_ff == 2100);
  CHECK(base.xl()->segment_length == 150);
  CHECK(base.xl()->mem_len == 150);
  const ModelConfig c = preset_config("tiny-xl");
  Model m(c, init_params(c, c.seed));
  RunOptions o;
  const RunResult r = m.run(std::string(40, 'a'), "", o);
  CHECK(r.output.shape == Shape{40, 256});
  CHECK(r.trace.find("decoder.seg2.layer1.self_attn"));
}
