#include <catch2/catch.hpp>

#include <cmath>

#include "core/tensor/error.h"
#include "core/model/estimate.h"
#include "core/model/params.h"
#include "core/model/presets.h"

using namespace atlas;

TEST_CASE("vanilla-base has the hand-counted number of parameters", "[params]") {
  // V = 258, d = 512, d_ff = 2048, 6 + 6 layers, biases everywhere, tied output:
  //   embedding 258*512                                   =    132,096
  //   encoder layer: 2 LN (2*1024) + attn (4*512*512 + 4*512) + FFN (2*512*2048 + 2048 + 512)
  //                = 2,048 + 1,050,624 + 2,099,712        =  3,152,384
  //   decoder layer: 3 LN + 2 attn + FFN = 3,072 + 2,101,248 + 2,099,712 = 4,204,032
  //   total = 132,096 + 6 * 3,152,384 + 6 * 4,204,032     = 44,270,592
  CHECK(parameter_count(preset_config("vanilla-base")) == 44270592);
}

TEST_CASE("initialisation is deterministic and depends on the seed", "[params]") {
  ModelConfig c = preset_config("tiny-encoder");
  ParamStore a = init_params(c, 1), b = init_params(c, 1), other = init_params(c, 2);
  CHECK(a.at("encoder.layer0.attn.wq").data == b.at("encoder.layer0.attn.wq").data);
  CHECK(a.at("encoder.layer0.attn.wq").data != other.at("encoder.layer0.attn.wq").data);
  CHECK(a.at("encoder.layer0.attn.bq").data == std::vector<float>(64, 0.0f));
  CHECK(a.at("encoder.layer0.attn_norm.gamma").data == std::vector<float>(64, 1.0f));
  // Glorot normal: std sqrt(2 / (64 + 64)) = 0.125; the sample std of 4096 draws is close.
  const auto& w = a.at("encoder.layer0.attn.wq").data;
  double s = 0;
  for (float v : w) s += double(v) * v;
  CHECK(std::sqrt(s / double(w.size())) == Approx(0.125).epsilon(0.05));
}

TEST_CASE("ScaleNorm's g starts at sqrt(d)", "[params]") {
  ParamStore p = init_params(preset_config("tiny-scalenorm"), 1);
  CHECK(p.at("decoder.layer0.ffn_norm.g").data[0] == Approx(8.0));
}

TEST_CASE("parameter checks name the tensor and the problem", "[params][errors]") {
  ModelConfig c = preset_config("tiny-encoder");
  ParamStore p = init_params(c, 1);
  ParamStore missing = p;
  missing.erase("encoder.layer1.ffn.w2");
  CHECK_THROWS_WITH(check_params(c, missing, "m.safetensors"),
                    Catch::Contains("m.safetensors") && Catch::Contains("missing tensor encoder.layer1.ffn.w2"));
  ParamStore wrong = p;
  wrong["encoder.layer0.attn.wq"] = Tensor({64, 32});
  CHECK_THROWS_WITH(check_params(c, wrong, "m"), Catch::Contains("has shape [64, 32], config expects [64, 64]"));
  ParamStore extra = p;
  extra["encoder.layer9.attn.wq"] = Tensor({2});
  CHECK_THROWS_WITH(check_params(c, extra, "m"), Catch::Contains("unexpected tensor encoder.layer9.attn.wq"));
  ParamStore nan = p;
  nan["encoder.layer0.attn.wq"].data[3] = std::nanf("");
  nan["encoder.layer0.attn.wq"].data[4] = INFINITY;
  auto warnings = check_params(c, nan, "m");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("2 non-finite values"));
}

TEST_CASE("attention memory estimate reproduces seed 003's BERT-base example", "[estimate]") {
  // BERT-base: 12 layers, d 768, 12 heads. Seed 003: (12 + 1.5) * 12 = 162 MB at 512 tokens,
  // (12 * 1024^2 * 4 / 2^20 + 12 * 64 * 1024 * 4 / 2^20) * 12 = 612 MB at 1024.
  ModelConfig bert;
  bert.architecture = Architecture::Encoder;
  bert.d_model = 768;
  bert.n_heads = 12;
  bert.d_ff = 3072;
  bert.n_layers = 12;
  bert.vocab_size = 30522;
  bert.max_positions = 1024;
  const double mb = 1024.0 * 1024.0;
  CHECK(estimate_cost(bert, 512).attention_bytes / mb == Approx(162.0));
  CHECK(estimate_cost(bert, 1024).attention_bytes / mb == Approx(612.0));
}

TEST_CASE("FLOP estimate counts every matrix product once", "[estimate]") {
  ModelConfig c;
  c.architecture = Architecture::Encoder;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 16;
  c.n_layers = 1;
  c.vocab_size = 256;
  c.output = OutputHead::None;
  // L = 4: projections 4 * 2*4*8*8 = 2048; QK^T and PV 2 * 2*4*4*8 = 512; FFN 2 * 2*4*8*16 = 2048
  CHECK(estimate_cost(c, 4).flops == Approx(2048 + 512 + 2048));
}
