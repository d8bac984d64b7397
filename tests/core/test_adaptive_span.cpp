// Adaptive attention span (core/variants/adaptive_span/adaptive_span.cpp, core/variants/relative_attention/relative_attention.cpp) against the
// naive oracle of naive_relative_attention.h, hand-computed mask values, FLOPs and penalty, and the
// invariants: z >= length equals full attention; rows sum to 1; bad values rejected.
#include <catch2/catch.hpp>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_relative_attention.h"
#include "core/model/presets.h"
#include "core/variants/adaptive_span/adaptive_span.h"
#include "tests/core/token_lists.h"
#include "tests/core/traced_array.h"

using namespace atlas;
using atlas::test::traced;
using atlas::test::tokens;

namespace {

ModelConfig span_config(Architecture arch, float z, int64_t ramp, int64_t max_span) {
  ModelConfig c;
  c.name = "span-test";
  c.architecture = arch;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.max_positions = 128;
  c.norm_position = NormPosition::Pre;
  c.attention_kind = SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}};
  c.adaptive_span()->init_z = z;
  c.adaptive_span()->ramp = ramp;
  c.adaptive_span()->max_span = max_span;
  return c;
}

void check_span_against_oracle(const ModelConfig& c, const ParamStore& p,
                               const std::vector<int>& ids) {
  Model m(c, p);
  RunResult r = m.forward(tokens(ids), {}, RunOptions{});
  naive::Result want = naive_i::forward(c, m.params(), ids);
  double worst = 0;
  const size_t V = want.logits[0].size();
  for (size_t i = 0; i < want.logits.size(); ++i)
    for (size_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(want.logits[i][v] - r.output.data[i * V + v]));
  CHECK(worst < 2e-4);
  const bool dec = c.architecture == Architecture::Decoder;
  const size_t L = ids.size();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const Tensor& a = traced(r, std::string(dec ? "decoder" : "encoder") + ".layer" +
                                    std::to_string(l) + (dec ? ".self_attn" : ".attn"));
    double err = 0;
    for (size_t h = 0; h < size_t(c.n_heads); ++h)
      for (size_t i = 0; i < L; ++i)
        for (size_t j = 0; j < L; ++j)
          err = std::max(err, std::abs(want.attn[size_t(l)][h][i][j] - a.data[(h * L + i) * L + j]));
    CHECK(err < 1e-5);
  }
}

// Different z per head and layer so every head masks differently.
ParamStore with_spans(const ModelConfig& c, const std::vector<float>& z) {
  ParamStore p = init_params(c, 9);
  const bool dec = c.architecture == Architecture::Decoder;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    auto& t = p.at(std::string(dec ? "decoder" : "encoder") + ".layer" + std::to_string(l) +
                   (dec ? ".self_attn" : ".attn") + ".span_z");
    for (size_t h = 0; h < t.data.size(); ++h) t.data[h] = z[(size_t(l) * 4 + h) % z.size()];
  }
  return p;
}

}  // namespace

TEST_CASE("span_mask follows m_z(x) = clamp((R + z - x) / R, 0, 1)", "[adaptive_span]") {
  // z = 2, R = 4: (6 - x) / 4 -> 1.5, 1.25, 1, 0.75, 0.5, 0.25, 0, -0.25, clamped
  const float want[] = {1, 1, 1, 0.75f, 0.5f, 0.25f, 0, 0};
  for (int x = 0; x < 8; ++x) CHECK(span_mask(2.0f, x, 4, 100) == Approx(want[x]));
  CHECK(span_mask(50.0f, 11, 4, 10) == 0.0f);  // beyond the maximum span S
  // The reference code's distance convention (offset 1): the ramp ends one step farther,
  // (7 - x) / 4 -> 1.75, 1.5, 1.25, 1, 0.75, 0.5, 0.25, 0.
  const float reference[] = {1, 1, 1, 1, 0.75f, 0.5f, 0.25f, 0};
  for (int x = 0; x < 8; ++x) CHECK(span_mask(2.0f, x, 4, 100, 1) == Approx(reference[x]));
  CHECK(span_mask(50.0f, 11, 4, 10, 1) == 0.0f);  // S still bounds the raw distance
  CHECK(span_mask(50.0f, 10, 4, 10, 1) == 1.0f);
  CHECK(span_distance(4, 1, 6, 6) == 3);
  CHECK(span_distance(1, 4, 6, 6) == 3);
}

TEST_CASE("adaptive span, mask inside the softmax, matches the naive oracle", "[adaptive_span]") {
  ModelConfig c = span_config(Architecture::Decoder, 1.0f, 3, 64);
  check_span_against_oracle(c, with_spans(c, {0.0f, 0.5f, 2.0f, 7.0f, 1.5f, 3.0f, 0.0f, 10.0f}),
               {5, 9, 200, 31, 7, 7, 100, 3, 1, 2});
  ModelConfig e = span_config(Architecture::Encoder, 1.0f, 2, 3);  // S = 3 clips the window
  e.norm_position = NormPosition::Post;
  check_span_against_oracle(e, with_spans(e, {0.0f, 1.0f, 2.5f, 4.0f}), {1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("adaptive span, reference mode (after softmax, renormalised), matches the oracle", "[adaptive_span]") {
  ModelConfig c = span_config(Architecture::Decoder, 1.0f, 3, 64);
  c.adaptive_span()->mode = SpanMaskMode::After;
  check_span_against_oracle(c, with_spans(c, {0.0f, 0.5f, 2.0f, 7.0f}),
                            {5, 9, 200, 31, 7, 7, 100, 3});
}

TEST_CASE("adaptive span with the reference code's distance matches the oracle, in both modes",
          "[adaptive_span]") {
  for (SpanMaskMode mode : {SpanMaskMode::Inside, SpanMaskMode::After}) {
    ModelConfig c = span_config(Architecture::Decoder, 1.0f, 3, 64);
    c.adaptive_span()->mode = mode;
    c.adaptive_span()->distance = SpanDistance::Reference;
    check_span_against_oracle(c, with_spans(c, {0.0f, 0.5f, 2.0f, 7.0f}),
                              {5, 9, 200, 31, 7, 7, 100, 3});
  }
  // The two conventions differ: with z = 0 and R = 2 the paper gives the previous key 1/2,
  // the reference 1 (mask curve of layer 0, head 0).
  ModelConfig c = span_config(Architecture::Decoder, 0.0f, 2, 64);
  ParamStore p = with_spans(c, {0.0f, 0.0f, 0.0f, 0.0f});
  const Tensor paper =
      traced(Model(c, p).forward(tokens({1, 2, 3, 4}), {}, RunOptions{}), "span.mask_curve");
  c.adaptive_span()->distance = SpanDistance::Reference;
  const Tensor ref =
      traced(Model(c, p).forward(tokens({1, 2, 3, 4}), {}, RunOptions{}), "span.mask_curve");
  REQUIRE(paper.shape == Shape{2, 4, 4});
  CHECK(paper.data[1] == 0.5f);
  CHECK(paper.data[2] == 0.0f);
  CHECK(ref.data[1] == 1.0f);
  CHECK(ref.data[2] == 0.5f);
  CHECK(ref.data[3] == 0.0f);
}

TEST_CASE("dynamic span z_t = S sigmoid(v . x_t + b) matches the oracle", "[adaptive_span]") {
  ModelConfig c = span_config(Architecture::Decoder, 0.0f, 2, 6);
  c.adaptive_span()->dynamic = true;
  ParamStore p = init_params(c, 4);
  for (auto& [name, t] : p)  // spread the spans: larger v, a bias per head
    if (name.find(".span_v") != std::string::npos)
      for (float& v : t.data) v *= 3.0f;
    else if (name.find(".span_b") != std::string::npos)
      for (size_t h = 0; h < t.data.size(); ++h) t.data[h] = float(h) - 1.5f;
  check_span_against_oracle(c, p, {5, 9, 200, 31, 7, 7, 100, 3, 4});
  RunResult r = Model(c, p).forward(tokens({1, 2, 3}), {}, RunOptions{});
  const Tensor& z = traced(r, "decoder.layer0.self_attn.span.dynamic_z");
  CHECK(z.shape == Shape{4, 3});
  for (float v : z.data) CHECK((v > 0.0f && v < 6.0f));
}

TEST_CASE("adaptive span with z >= sequence length equals full attention", "[adaptive_span]") {
  for (SpanMaskMode mode : {SpanMaskMode::Inside, SpanMaskMode::After}) {
    ModelConfig c = span_config(Architecture::Decoder, 12.0f, 4, 100);
    c.adaptive_span()->mode = mode;
    ParamStore p = init_params(c, 5);
    ModelConfig plain = c;
    plain.attention_kind = SoftmaxAttention{};
    ParamStore pp;
    for (auto& [name, t] : p)
      if (name.find(".span_") == std::string::npos) pp.emplace(name, t);
    const std::vector<int> ids = {1, 22, 33, 44, 55, 66, 77, 88, 99, 100, 101, 102};  // L = 12
    RunResult a = Model(c, p).forward(tokens(ids), {}, RunOptions{});
    RunResult b = Model(plain, pp).forward(tokens(ids), {}, RunOptions{});
    double worst = 0;
    for (size_t i = 0; i < a.output.data.size(); ++i)
      worst = std::max(worst, double(std::abs(a.output.data[i] - b.output.data[i])));
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("adaptive span rows sum to 1 and keys beyond z + R get exactly 0", "[adaptive_span]") {
  ModelConfig c = span_config(Architecture::Decoder, 1.0f, 2, 64);  // keys with i - j >= 3 masked
  Model m(c, init_params(c, 1));
  RunResult r = m.forward(tokens({3, 1, 4, 1, 5, 9, 2}), {}, RunOptions{});
  const Tensor& a = traced(r, "decoder.layer0.self_attn");
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 7; ++i) {
      double s = 0;
      for (int64_t j = 0; j < 7; ++j) {
        const float v = a.data[size_t((h * 7 + i) * 7 + j)];
        if (j > i || i - j >= 3) CHECK(v == 0.0f);
        s += v;
      }
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("span summary arrays: z, mask curve, FLOPs saved, L1 penalty by hand", "[adaptive_span]") {
  ModelConfig c = span_config(Architecture::Decoder, 0.0f, 2, 64);
  c.adaptive_span()->loss_coeff = 0.5f;
  ParamStore p = with_spans(c, {0.0f, 0.0f, 0.0f, 0.0f, 3.0f, 3.0f, 3.0f, 3.0f});
  RunResult r = Model(c, p).forward(tokens({1, 2, 3, 4, 5, 6}), {}, RunOptions{});
  const Tensor& z = traced(r, "span.z");
  REQUIRE(z.shape == Shape{2, 4});
  CHECK(z.data[0] == 0.0f);
  CHECK(z.data[4] == 3.0f);
  // layer 0, z = 0, R = 2: keys at distance >= 2 are skipped. Causal pairs with i - j >= 2 for
  // L = 6: 0 + 0 + 1 + 2 + 3 + 4 = 10, times 4 d_head = 16 FLOPs each (d_head = 4).
  const Tensor& f = traced(r, "span.flops_saved");
  REQUIRE(f.shape == Shape{2, 4});
  CHECK(f.data[0] == 160.0f);
  // layer 1, z = 3, R = 2: distance >= 5 skipped: only (5, 0).
  CHECK(f.data[4] == 16.0f);
  const Tensor& pen = traced(r, "span.penalty");
  REQUIRE(pen.shape == Shape{2});
  CHECK(pen.data[0] == 0.0f);
  CHECK(pen.data[1] == Approx(0.5 * 12.0));  // coeff * sum of the four z = 3
  const Tensor& curve = traced(r, "span.mask_curve");
  REQUIRE(curve.shape == Shape{2, 4, 6});
  // layer 0 head 0, z = 0, R = 2: (2 - x) / 2 -> 1, 0.5, 0, 0, 0, 0
  CHECK(curve.data[0] == 1.0f);
  CHECK(curve.data[1] == 0.5f);
  CHECK(curve.data[2] == 0.0f);
  CHECK(traced(r, "decoder.layer0.self_attn.span.mask").shape == Shape{4, 6, 6});
}

TEST_CASE("adaptive span config: bad values rejected naming the key", "[adaptive_span][config]") {
  auto bad = [](const std::string& inner, const std::string& key) {
    INFO(inner);
    CHECK_THROWS_WITH(parse_config(R"({"adaptive_span": {)" + inner + "}}", "t"), Catch::Contains(key));
  };
  bad(R"("max_span": -5)", "adaptive_span.max_span");
  bad(R"("max_span": 0)", "adaptive_span.max_span");
  bad(R"("ramp": 0)", "adaptive_span.ramp");
  bad(R"("init_z": -1)", "adaptive_span.init_z");
  bad(R"("max_span": 10, "init_z": 11)", "adaptive_span.init_z");
  bad(R"("loss_coeff": -0.1)", "adaptive_span.loss_coeff");
  bad(R"("mode": "before")", "adaptive_span.mode");
  bad(R"("rampp": 3)", "ramp");
  bad(R"("distance": "refrence")", "adaptive_span.distance");
  ModelConfig c = parse_config(
      R"({"adaptive_span": {"enabled": true, "max_span": 100, "ramp": 8, "init_z": 2.5, "mode": "after", "dynamic": true, "loss_coeff": 0.25, "distance": "reference"}})",
      "t");
  CHECK(c.adaptive_span()->mode == SpanMaskMode::After);
  CHECK(c.adaptive_span()->distance == SpanDistance::Reference);
  CHECK(parse_config(config_to_json(c), "t").adaptive_span()->distance == SpanDistance::Reference);
  ModelConfig back = parse_config(config_to_json(c), "t");
  CHECK(back.adaptive_span()->max_span == 100);
  CHECK(back.adaptive_span()->ramp == 8);
  CHECK(back.adaptive_span()->init_z == 2.5f);
  CHECK(back.adaptive_span()->dynamic);
  CHECK(back.adaptive_span()->loss_coeff == 0.25f);
}

TEST_CASE("adaptive span presets load and run", "[adaptive_span]") {
  for (const char* name : {"tiny-span", "tiny-span-dynamic"}) {
    ModelConfig c = preset_config(name);
    Model m(c, init_params(c, c.seed));
    RunResult r = m.run("hello world", "", RunOptions{});
    CHECK(r.trace.find("span.z") != nullptr);
  }
  ModelConfig base = preset_config("adaptive-span-base");
  CHECK(base.adaptive_span()->max_span == 8192);
  CHECK(base.adaptive_span()->ramp == 32);
}
