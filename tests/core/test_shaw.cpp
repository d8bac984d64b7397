// Shaw et al. relative positions (core/variants/shaw/shaw.cpp, core/variants/relative_attention/relative_attention.cpp) against the naive
// oracle of naive_relative_attention.h, plus the invariants of the variants: all-zero tables give the
// vanilla model, rows sum to 1 over allowed keys, bad config values are rejected by key.
#include <catch2/catch.hpp>

#include <memory>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_relative_attention.h"
#include "core/model/presets.h"
#include "core/variants/relative_attention/relative_attention.h"
#include "core/variants/shaw/shaw.h"
#include "tests/core/token_lists.h"
#include "tests/core/traced_array.h"

using namespace atlas;
using atlas::test::traced;
using atlas::test::tokens;

namespace {

ModelConfig shaw_config(Architecture arch, int64_t k) {
  ModelConfig c;
  c.name = "shaw-test";
  c.architecture = arch;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.max_positions = 128;
  c.positional = Positional::None;
  c.norm_position = NormPosition::Pre;
  c.attention_kind = SoftmaxAttention{.shaw = ShawConfig{}};
  c.shaw()->max_distance = k;
  return c;
}

double max_diff(const Tensor& got, const naive::Matrix& want) {
  double worst = 0;
  const size_t cols = want[0].size();
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < cols; ++j) worst = std::max(worst, std::abs(want[i][j] - got.data[i * cols + j]));
  return worst;
}

void check_shaw_against_oracle(const ModelConfig& c, const std::vector<int>& ids) {
  Model m(c, init_params(c, 7));
  RunResult r = m.forward(tokens(ids), {}, RunOptions{});
  naive::Result want = naive_i::forward(c, m.params(), ids);
  CHECK(max_diff(r.output, want.logits) < 2e-4);
  const std::string stack = c.architecture == Architecture::Decoder ? "decoder" : "encoder";
  const std::string an = c.architecture == Architecture::Decoder ? ".self_attn" : ".attn";
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const Tensor& a = traced(r, stack + ".layer" + std::to_string(l) + an);
    const size_t L = ids.size();
    double worst = 0;
    for (size_t h = 0; h < size_t(c.n_heads); ++h)
      for (size_t i = 0; i < L; ++i)
        for (size_t j = 0; j < L; ++j)
          worst = std::max(worst, std::abs(want.attn[size_t(l)][h][i][j] - a.data[(h * L + i) * L + j]));
    CHECK(worst < 1e-5);
  }
}

}  // namespace

TEST_CASE("Shaw decoder matches the naive oracle, efficient and direct forms", "[shaw]") {
  for (bool efficient : {true, false}) {
    ModelConfig c = shaw_config(Architecture::Decoder, 2);
    c.shaw()->efficient = efficient;
    INFO("efficient " << efficient);
    check_shaw_against_oracle(c, {5, 9, 200, 31, 7, 7, 100, 3});
  }
}

TEST_CASE("Shaw encoder (both directions of j - i) matches the naive oracle", "[shaw]") {
  ModelConfig c = shaw_config(Architecture::Encoder, 3);
  c.norm_position = NormPosition::Post;
  check_shaw_against_oracle(c, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  c.shaw()->max_distance = 0;  // one table row for every pair
  check_shaw_against_oracle(c, {1, 2, 3, 4});
}

TEST_CASE("Shaw with all-zero tables equals the vanilla model", "[shaw]") {
  ModelConfig c = shaw_config(Architecture::Decoder, 3);
  ParamStore p = init_params(c, 3);
  for (auto& [name, t] : p)
    if (name.find(".rel_") != std::string::npos) std::fill(t.data.begin(), t.data.end(), 0.0f);
  ModelConfig plain = c;
  plain.attention_kind = SoftmaxAttention{};
  ParamStore pp;
  for (auto& [name, t] : p)
    if (name.find(".rel_") == std::string::npos) pp.emplace(name, t);
  REQUIRE(pp.size() + 4 == p.size());  // two tables per layer, two layers
  const std::vector<int> ids = {10, 20, 30, 40, 50, 60};
  RunResult a = Model(c, p).forward(tokens(ids), {}, RunOptions{});
  RunResult b = Model(plain, pp).forward(tokens(ids), {}, RunOptions{});
  double worst = 0;
  for (size_t i = 0; i < a.output.data.size(); ++i)
    worst = std::max(worst, double(std::abs(a.output.data[i] - b.output.data[i])));
  CHECK(worst < 1e-5);
}

TEST_CASE("Shaw attention rows sum to 1 over the allowed keys, 0 elsewhere", "[shaw]") {
  ModelConfig c = shaw_config(Architecture::Decoder, 2);
  Model m(c, init_params(c, 1));
  RunResult r = m.forward(tokens({3, 1, 4, 1, 5, 9}), {}, RunOptions{});
  const Tensor& a = traced(r, "decoder.layer1.self_attn");
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 6; ++i) {
      double s = 0;
      for (int64_t j = 0; j < 6; ++j) {
        const float v = a.data[size_t((h * 6 + i) * 6 + j)];
        if (j > i) CHECK(v == 0.0f);
        s += v;
      }
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("Shaw traces the clipped index and, with scores, the key and value terms", "[shaw]") {
  ModelConfig c = shaw_config(Architecture::Encoder, 1);
  Model m(c, init_params(c, 2));
  RunOptions o;
  o.trace.scores = true;
  RunResult r = m.forward(tokens({1, 2, 3, 4}), {}, o);
  const Tensor& idx = traced(r, "encoder.layer0.attn.shaw.rel_index");
  // clip(j - i, -1, 1) + 1, by hand
  const std::vector<float> want = {1, 2, 2, 2,  //
                                   0, 1, 2, 2,  //
                                   0, 0, 1, 2,  //
                                   0, 0, 0, 1};
  CHECK(idx.data == want);
  CHECK(traced(r, "encoder.layer0.attn.shaw.key_term").shape == Shape{4, 4, 4});
  CHECK(traced(r, "encoder.layer1.attn.shaw.value_term").shape == Shape{4, 4, 4});
  // With a^K all zero the key term is exactly zero.
  ParamStore p = init_params(c, 2);
  for (const char* t : {"encoder.layer0.attn.rel_k", "encoder.layer1.attn.rel_k"})
    std::fill(p.at(t).data.begin(), p.at(t).data.end(), 0.0f);
  RunResult z = Model(c, p).forward(tokens({1, 2, 3, 4}), {}, o);
  for (float v : traced(z, "encoder.layer0.attn.shaw.key_term").data) CHECK(v == 0.0f);
}

TEST_CASE("shaw_key_term and shaw_value_term: efficient form equals the direct form", "[shaw]") {
  Mat q = Mat::Random(5, 3), ak = Mat::Random(7, 3), probs = Mat::Random(5, 6).cwiseAbs();
  Mat a = shaw_key_term(q, ak, 6, 3, true), b = shaw_key_term(q, ak, 6, 3, false);
  CHECK((a - b).cwiseAbs().maxCoeff() < 1e-5f);
  // by hand: query 0 (position 1 of 6 keys), key 5: clip(5 - 1, -3, 3) + 3 = 6
  CHECK(b(0, 5) == Approx(q.row(0).dot(ak.row(6))));
  Mat va = shaw_value_term(probs, ak, 3, true), vb = shaw_value_term(probs, ak, 3, false);
  CHECK((va - vb).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("Shaw config: keys parsed, bad values rejected naming the key", "[shaw][config]") {
  ModelConfig c = parse_config(R"({"shaw": {"enabled": true, "max_distance": 7, "efficient": false}})", "t");
  CHECK(c.shaw() != nullptr);
  CHECK(c.shaw()->max_distance == 7);
  CHECK_FALSE(c.shaw()->efficient);
  CHECK(parse_config(config_to_json(c), "t").shaw()->max_distance == 7);
  CHECK_THROWS_WITH(parse_config(R"({"shaw": {"max_distance": -1}})", "t"),
                    Catch::Contains("shaw.max_distance"));
  CHECK_THROWS_WITH(parse_config(R"({"shaw": {"max_distanse": 3}})", "t"),
                    Catch::Contains("max_distance"));
  CHECK_THROWS_WITH(parse_config(R"({"shaw": {"enabled": 1}})", "t"), Catch::Contains("shaw.enabled"));
  CHECK_THROWS_WITH(parse_config(R"({"shaw": {"enabled": true}, "performer": {"enabled": true}})", "t"),
                    Catch::Contains("shaw.enabled"));
}

TEST_CASE("Shaw presets load and run", "[shaw]") {
  ModelConfig c = preset_config("tiny-shaw");
  CHECK(c.shaw() != nullptr);
  Model m(c, init_params(c, c.seed));
  RunResult r = m.run("hello", "", RunOptions{});
  CHECK(r.trace.find("decoder.layer1.self_attn") != nullptr);
  CHECK(preset_config("shaw-base").shaw()->max_distance == 20);
}

TEST_CASE("the relative_attention op refuses Shaw tables of the wrong shape, naming them",
          "[shaw][op]") {
  const std::unique_ptr<Backend> be = make_cpu_backend();
  const Tensor x({4, 6});  // 2 heads of 3
  RelativeAttentionArgs a;
  a.attn.heads = 2;
  a.attn.scale = 0.5f;
  a.max_distance = 2;
  a.rel_k = be->upload(Tensor({5, 3}));
  a.rel_v = be->upload(Tensor({5, 3}));
  CHECK(relative_attention(*be, be->upload(x), be->upload(x), be->upload(x), a).out.shape ==
        Shape{4, 6});
  a.rel_v = be->upload(Tensor({4, 3}));  // 2k + 1 = 5 rows expected
  CHECK_THROWS_WITH(relative_attention(*be, be->upload(x), be->upload(x), be->upload(x), a),
                    Catch::Contains("Shaw tables [5, 3], [4, 3] are not [2k+1, d_head]"));
  a.rel_v = {};
  CHECK_THROWS_WITH(relative_attention(*be, be->upload(x), be->upload(x), be->upload(x), a),
                    Catch::Contains("rel_k given without rel_v"));
  a = RelativeAttentionArgs{};
  a.attn.heads = 2;
  a.span_z = {1.0f, 2.0f};  // needs heads x Lq = 8
  CHECK_THROWS_WITH(relative_attention(*be, be->upload(x), be->upload(x), be->upload(x), a),
                    Catch::Contains("span_z needs heads x Lq = 8 values, got 2"));
}
