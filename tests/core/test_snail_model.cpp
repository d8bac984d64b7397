// SNAIL as a model (core/variants/snail/snail_model.h, preset snail-small): the parameter count worked out by
// hand from the paper's block structure, causality of the whole model (perturbing token t
// leaves every logit and attention row before t unchanged), attention rows as distributions,
// the receptive field against the dilation arithmetic, config checks and a save/load round trip.
#include <unistd.h>  // getpid: temp names of this process (test runs may share /tmp)
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/formats/model_io.h"
#include "core/model/presets.h"
#include "core/variants/snail/snail_model.h"
#include "tests/core/traced_array.h"

using namespace atlas;
using atlas::test::traced;

namespace {

std::vector<TokenInfo> bytes(const std::string& s) {
  std::vector<TokenInfo> out;
  for (unsigned char ch : s) out.push_back({int32_t(ch), std::string(1, char(ch))});
  return out;
}

}  // namespace

TEST_CASE("snail-small has the parameter count of its block structure", "[snail][model]") {
  // T = 64: ceil(log2 64) = 6 dense blocks per TC block, each adding D = 8 channels; every
  // attention block adds V = 8. Channels c: 16 -> attn0 -> 24 -> TC0 -> 72 -> attn1 -> 80 ->
  // TC1 -> 128 -> attn2 -> 136.
  //   embedding 256 x 16                                   4,096
  //   attention block on c channels: (2 K + V) c = 40 c     40 (16 + 72 + 128) = 8,640
  //   dense block on c channels: 2 D (2 c) + 2 D = 32 c + 16
  //     TC0: c = 24, 32, ..., 64 -> 32 * 264 + 96          8,544
  //     TC1: c = 80, 88, ..., 120 -> 32 * 600 + 96         19,296
  //   output 256 x 136 + 256                               35,072
  const ModelConfig c = preset_config("snail-small");
  CHECK(parameter_count(c) == 4096 + 8640 + 8544 + 19296 + 35072);
}

TEST_CASE("the SNAIL model is causal end to end and traces its blocks as layers", "[snail][model]") {
  const ModelConfig c = preset_config("snail-small");
  const Model model(c, init_params(c, c.seed));
  const std::string text = "abracadabra, said the snail";
  const RunResult a = model.forward(bytes(text), {}, {});
  REQUIRE(a.is_logits);
  const int64_t L = static_cast<int64_t>(text.size()), V = c.vocab_size;
  REQUIRE(a.output.shape == Shape{L, V});
  for (int b = 0; b <= c.snail()->tc_blocks; ++b) {
    const Tensor& p = traced(a, "decoder.layer" + std::to_string(b) + ".self_attn");
    REQUIRE(p.shape == Shape{1, L, L});
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) {
        if (j > i) CHECK(p.data[size_t(i * L + j)] == 0.0f);
        s += p.data[size_t(i * L + j)];
      }
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
  }
  // Change token 10: nothing before it may move, position 10 must.
  std::string changed = text;
  changed[10] = 'Z';
  const RunResult b = model.forward(bytes(changed), {}, {});
  for (int64_t i = 0; i < L; ++i) {
    double diff = 0;
    for (int64_t v = 0; v < V; ++v)
      diff = std::max(diff, double(std::abs(a.output.data[size_t(i * V + v)] - b.output.data[size_t(i * V + v)])));
    INFO("position " << i);
    if (i < 10) CHECK(diff == 0.0);
    if (i == 10) CHECK(diff > 1e-4);
  }
  // With T = 64 the dilations 1..32, twice, reach every earlier step within 63.
  const Tensor& rf = traced(a, "snail.receptive_field");
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) CHECK(rf.data[size_t(i * L + j)] == (j <= i ? 1.0f : 0.0f));
}

TEST_CASE("SNAIL paper dilations leave odd distances to the attention", "[snail][model]") {
  ModelConfig c = preset_config("snail-small");
  c.snail()->paper_dilations = true;
  const Model model(c, init_params(c, 1));
  const RunResult r = model.forward(bytes("0123456789"), {}, {});
  const Tensor& rf = traced(r, "snail.receptive_field");
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j <= i; ++j) CHECK(rf.data[size_t(i * 10 + j)] == ((i - j) % 2 == 0 ? 1.0f : 0.0f));
}

TEST_CASE("SNAIL config errors name the problem, and the section round-trips", "[snail][model]") {
  ModelConfig c = preset_config("snail-small");
  c.architecture = Architecture::Encoder;
  CHECK_THROWS_WITH(validate_config(c, "test"), Catch::Contains("needs architecture \"decoder\""));
  c = preset_config("snail-small");
  c.snail()->length = 128;  // max_positions is 64
  CHECK_THROWS_WITH(validate_config(c, "test"), Catch::Contains("snail.length 128 exceeds max_positions 64"));
  c = preset_config("snail-small");
  c.snail()->tc_blocks = 9;
  CHECK_THROWS_WITH(validate_config(c, "test"), Catch::Contains("snail.tc_blocks"));
  CHECK_THROWS_WITH(parse_config(R"({"architecture": "decoder", "d_model": 16, "n_heads": 1, "d_ff": 16,
      "n_layers": 1, "vocab_size": 256, "snail": {"enabled": true, "filter": 8}})", "cfg.json"),
                    Catch::Contains("filter"));

  // Save and load: the same config section and weights give the same logits.
  c = preset_config("snail-small");
  c.snail()->tc_blocks = 1;
  c.snail()->paper_dilations = true;
  const Model model(c, init_params(c, 3));
  const auto dir = std::filesystem::temp_directory_path() / ("atlas-snail-roundtrip-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  save_model(model, dir.string());
  const Model back = load_model(dir.string());
  CHECK(back.config().snail()->tc_blocks == 1);
  CHECK(back.config().snail()->paper_dilations);
  const RunResult x = model.forward(bytes("hello"), {}, {}), y = back.forward(bytes("hello"), {}, {});
  CHECK(x.output.data == y.output.data);
  std::filesystem::remove_all(dir);
}
