// The Llama-family block pieces (RMSNorm, gated feed-forward, grouped-query heads, sliding
// window; core/config/block_config.h) against independent oracles: values worked by hand,
// central finite differences of their training ops, the training forward against the
// inference engine, and the config sections' ranges and combinations. The whole forward is
// checked against the naive double-precision Transformer in test_model.cpp ([llama]).
#include <map>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/formats/dump.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "tests/core/finite_differences.h"
#include "tests/core/train_test_util.h"
#include "tests/core/config_error.h"

using namespace atlas;
using atlas::test::parse;
using Catch::Matchers::Contains;

namespace {

Tensor tensor(Shape shape, std::vector<float> values) {
  Tensor t(std::move(shape));
  t.data.assign(values.begin(), values.end());
  return t;
}

}  // namespace

TEST_CASE("CPU backend: RMSNorm, SiLU, product and repeated heads worked by hand", "[llama]") {
  auto be = make_cpu_backend();
  SECTION("RMSNorm of (3, 4): rms = sqrt(12.5), times the gains (1, 2)") {
    const Tensor y = be->download(be->rms_norm(be->upload(tensor({1, 2}, {3, 4})),
                                               be->upload(tensor({2}, {1, 2})), 0.0f));
    CHECK(y.data[0] == Approx(3 / std::sqrt(12.5)));
    CHECK(y.data[1] == Approx(8 / std::sqrt(12.5)));
  }
  SECTION("SiLU(x) = x / (1 + e^-x)") {
    const Tensor y = be->download(be->activation(be->upload(tensor({3}, {0, 1, -2})), Activation::Silu));
    CHECK(y.data[0] == 0.0f);
    CHECK(y.data[1] == Approx(1 / (1 + std::exp(-1.0))));
    CHECK(y.data[2] == Approx(-2 / (1 + std::exp(2.0))));
  }
  SECTION("elementwise product") {
    CHECK(be->download(be->mul(be->upload(tensor({3}, {1, -2, 3})), be->upload(tensor({3}, {4, 5, -6}))))
              .data == std::vector<float>{4, -10, -18});
  }
  SECTION("two key/value heads of 2 serve 6 query heads: a a a b b b") {
    const Tensor y = be->download(be->repeat_heads(be->upload(tensor({1, 4}, {1, 2, 3, 4})), 3, 2));
    CHECK(y.data == std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
    CHECK(repeat_heads_reference(tensor({1, 4}, {1, 2, 3, 4}), 3, 2).data == y.data);
  }
  SECTION("the sliding window in the mask: query 5 sees keys 3, 4, 5 with a window of 3") {
    AttentionMask m;
    m.causal = true;
    m.window = 3;
    for (int64_t j = 0; j < 8; ++j) CHECK(m.is_allowed(5, j, 8) == (j >= 3 && j <= 5));
  }
}

TEST_CASE("the attention and ffn sections: parse, write, ranges and combinations", "[llama][config]") {
  const ModelConfig c = parse(R"({"architecture": "decoder", "n_heads": 8, "d_model": 64,
      "attention": {"kv_heads": 2, "sliding_window": 4096}, "ffn": {"gated": true}})");
  CHECK(c.kv_heads() == 2);
  CHECK(c.attention.sliding_window == 4096);
  CHECK(c.ffn.gated);
  CHECK(parse(config_to_json(c)).attention.kv_heads == 2);
  CHECK(config_to_json(parse(config_to_json(c))) == config_to_json(c));
  CHECK(parse("{}").kv_heads() == parse("{}").n_heads);  // multi-head by default
  CHECK_THROWS_WITH(parse(R"({"n_heads": 8, "d_model": 64, "attention": {"kv_heads": 3}})"),
                    Contains("attention.kv_heads must divide n_heads (8), got 3"));
  CHECK_THROWS_WITH(parse(R"({"attention": {"kv_head": 2}})"), Contains("did you mean \"kv_heads\""));
  CHECK_THROWS_WITH(parse(R"({"attention": {"sliding_window": 4}})"),
                    Contains("needs causal self-attention"));
  CHECK_THROWS_WITH(parse(R"({"architecture": "decoder", "attention": {"kv_heads": 2},
                              "shaw": {"enabled": true}})"),
                    Contains("cannot be combined with shaw"));
  CHECK_THROWS_WITH(parse(R"({"ffn": {"gated": 1}})"), Contains("ffn.gated must be true or false"));
  CHECK_THROWS_WITH(parse(R"({"norm": "rms"})"), Contains("\"rmsnorm\""));
  CHECK(parse(R"({"norm": "rmsnorm", "activation": "silu"})").norm == NormKind::RmsNorm);
  // Heads of their own width: d_model need not divide by n_heads then.
  const ModelConfig wide = parse(R"({"architecture": "decoder", "n_heads": 3, "d_model": 64,
      "attention": {"head_dim": 32}})");
  CHECK(wide.d_head() == 32);
  CHECK(wide.attention_width() == 96);
  CHECK(parse(config_to_json(wide)).attention.head_dim == 32);
  CHECK_THROWS_WITH(parse(R"({"n_heads": 3, "d_model": 64})"), Contains("give attention.head_dim"));
  CHECK_THROWS_WITH(parse(R"({"attention": {"head_dim": -1}})"), Contains("attention.head_dim"));
  CHECK_THROWS_WITH(parse(R"({"n_heads": 1024, "attention": {"head_dim": 65536}})"),
                    Contains("largest attention width"));
  CHECK_THROWS_WITH(parse(R"({"architecture": "decoder", "n_heads": 2, "d_model": 64, "attention": {"head_dim": 8},
                              "shaw": {"enabled": true}})"),
                    Contains("cannot be combined with shaw"));
}

TEST_CASE("parameter shapes: k and v projections have kv_heads heads; gated FFN has w3", "[llama]") {
  const ModelConfig c = preset_config("tiny-llama");
  bool saw_wk = false, saw_w3 = false;
  for (const ParamSpec& s : param_specs(c)) {
    if (s.name == "decoder.layer0.self_attn.wk") {
      CHECK(s.shape == Shape{c.kv_heads() * c.d_head(), c.d_model});
      saw_wk = true;
    }
    if (s.name == "decoder.layer0.ffn.w3") {
      CHECK(s.shape == Shape{c.d_ff, c.d_model});
      saw_w3 = true;
    }
    CHECK(s.name.find(".beta") == std::string::npos);  // RMSNorm has no bias
  }
  CHECK(saw_wk);
  CHECK(saw_w3);
  // 2 layers of q, o [64, 64], k, v [16, 64], three FFN maps [176, 64], two norms; final norm;
  // embedding and untied output [256, 64].
  const int64_t layer = 2 * 64 * 64 + 2 * 16 * 64 + 3 * 176 * 64 + 2 * 64;
  CHECK(parameter_count(c) == 2 * layer + 64 + 2 * 256 * 64);
  // Heads of their own width: q [H D, d], o [d, H D], biases by what they add to.
  ModelConfig w = c;
  w.attention.head_dim = 24;  // 4 heads of 24 = 96 over d_model 64
  w.attention_bias = true;
  std::map<std::string, Shape> shapes;
  for (const ParamSpec& s : param_specs(w)) shapes[s.name] = s.shape;
  CHECK(shapes["decoder.layer0.self_attn.wq"] == Shape{96, 64});
  CHECK(shapes["decoder.layer0.self_attn.wo"] == Shape{64, 96});
  CHECK(shapes["decoder.layer0.self_attn.wk"] == Shape{w.kv_heads() * 24, 64});
  CHECK(shapes["decoder.layer0.self_attn.bq"] == Shape{96});
  CHECK(shapes["decoder.layer0.self_attn.bo"] == Shape{64});
}

namespace atlas::train {

TEST_CASE("training ops of the Llama block match finite differences", "[llama][train][grad]") {
  using MD = MatT<double>;
  Rng rng(9);
  ParamsT<double> p{{"x", fd::random_mat(rng, 4, 6)}, {"g", fd::random_mat(rng, 1, 6)},
                    {"y", fd::random_mat(rng, 4, 6)}};
  const MD weights = fd::random_mat(rng, 4, 6), wide = fd::random_mat(rng, 4, 18);
  SECTION("rms_norm") {
    auto loss = [&](const ParamsT<double>& q, ParamsT<double>* grads) {
      Tape<double> t;
      const int out = t.rms_norm(t.param("x", q.at("x")), t.param("g", q.at("g")), 1e-5);
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    };
    CHECK(fd::check_gradients(p, loss) > 30);
  }
  SECTION("multiply and SiLU") {
    auto loss = [&](const ParamsT<double>& q, ParamsT<double>* grads) {
      Tape<double> t;
      const int a = t.activation(t.param("x", q.at("x")), FfnActivation::Silu);
      const int out = t.multiply(a, t.param("y", q.at("y")));
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    };
    CHECK(fd::check_gradients(p, loss) > 30);
  }
  SECTION("repeat_heads: 3 heads of 2 serve 9") {
    auto loss = [&](const ParamsT<double>& q, ParamsT<double>* grads) {
      Tape<double> t;
      const int out = t.repeat_heads(t.param("x", q.at("x")), 3, 2);
      if (grads) t.backward(out, wide, *grads);
      return t.value(out).cwiseProduct(wide).sum();
    };
    CHECK(fd::check_gradients(p, loss) > 20);
  }
}

TEST_CASE("Llama-style training forward equals inference; whole-model gradients", "[llama][train]") {
  ModelConfig c = testing::small_config(Architecture::Decoder);
  c.positional = Positional::Rotary;
  c.norm = NormKind::RmsNorm;
  c.norm_position = NormPosition::Pre;
  c.activation = FfnActivation::Silu;
  c.ffn.gated = true;
  c.attention.kv_heads = 1;
  c.attention.sliding_window = 3;
  testing::check_same_as_inference(c, {3, 1, 4, 1, 5, 9, 2, 6});
  ParamsT<double> params = testing::noisy_params(c);
  const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
  CHECK(fd::check_gradients(params, testing::cross_entropy_loss(c, ex), 1e-6, 8) > 100);
  c.attention.head_dim = 6;  // 2 heads of 6 over d_model 16 (the default would be 8)
  testing::check_same_as_inference(c, {3, 1, 4, 1, 5, 9, 2, 6});
}

}  // namespace atlas::train

TEST_CASE("the catalogue says which key/value head each query head shares; dumps keep it",
          "[llama][catalogue]") {
  const ModelConfig c = preset_config("tiny-mistral");  // 4 query heads on 2 key/value heads
  Model model(c, init_params(c, c.seed));
  const RunResult r = model.run("grouped heads, sliding window", "", RunOptions{});
  REQUIRE(!r.trace.attention_maps.empty());
  for (const AttentionMap& m : r.trace.attention_maps) {
    CHECK(m.heads == 4);
    CHECK(m.kv_heads == 2);
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("atlas-test-kv-dump-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  write_dump(dir.string(), model, r);
  const Trace back = read_trace_dump(dir.string()).trace;
  REQUIRE(back.attention_maps.size() == r.trace.attention_maps.size());
  for (const AttentionMap& m : back.attention_maps) CHECK(m.kv_heads == 2);
  std::filesystem::remove_all(dir);
  const Trace plain = Model(preset_config("tiny-rope"), init_params(preset_config("tiny-rope"), 1))
                          .run("abc", "", RunOptions{})
                          .trace;
  for (const AttentionMap& m : plain.attention_maps) CHECK(m.kv_heads == 0);
}
