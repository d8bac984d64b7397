// Ablations at inference (core/analysis/ablation.cpp): LayerDrop pruning and DropHead against
// independent constructions of the same model, and the reported KL / cosine recomputed here.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/ablation.h"
#include "core/tensor/error.h"
#include "core/model/model.h"

using namespace atlas;

namespace {

ModelConfig small_ablation_config(Architecture arch, NormPosition np) {
  ModelConfig c;
  c.name = "ablation-test";
  c.architecture = arch;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 4;
  c.max_positions = 128;
  c.norm_position = np;
  c.init_std = 0.3f;
  return c;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape == b.shape);
  double w = 0;
  for (size_t i = 0; i < a.data.size(); ++i) w = std::max(w, double(std::abs(a.data[i] - b.data[i])));
  return w;
}

}  // namespace

TEST_CASE("LayerDrop every-other pruning drops depths d = 0 mod floor(1/p)", "[ablation]") {
  CHECK(layerdrop_every_other(6, 0.5) == std::vector<int64_t>{1, 3, 5});
  CHECK(layerdrop_every_other(8, 0.25) == std::vector<int64_t>{3, 7});
  CHECK(layerdrop_every_other(5, 0.3) == std::vector<int64_t>{2});  // floor(1/0.3) = 3
  CHECK_THROWS_WITH(layerdrop_every_other(4, 0.0), Catch::Contains("(0, 1]"));
  ModelConfig c = small_ablation_config(Architecture::Decoder, NormPosition::Pre);
  AblationSpec all;
  all.layerdrop_rate = 1.0;
  CHECK_THROWS_WITH(ablated_layers(c, all), Catch::Contains("every layer"));
  AblationSpec bad;
  bad.drop_layers = {4};
  CHECK_THROWS_WITH(ablated_layers(c, bad), Catch::Contains("layer 4"));
  AblationSpec mixed;
  mixed.drop_layers = {0, 3};
  mixed.layerdrop_rate = 0.5;  // 1, 3
  CHECK(ablated_layers(c, mixed) == std::vector<int64_t>{0, 1, 3});
}

TEST_CASE("dropping a pre-norm layer equals zeroing its sub-layer outputs", "[ablation]") {
  // Pre-norm: x + F(LN(x)) with F = 0 is the identity, so a model whose layer 1 and 2 have
  // W^O, b^O, W2, b2 zero computes exactly the pruned model.
  ModelConfig c = small_ablation_config(Architecture::Decoder, NormPosition::Pre);
  ParamStore p = init_params(c, 3);
  for (auto& [name, t] : p)
    if (name.find("b") != std::string::npos && name.find("decoder.layer") == 0) {
      for (float& v : t.data) v = 0.1f;  // non-zero biases so dropping bo/b2 matters
    }
  Model full(c, p);
  ParamStore z = p;
  for (const char* l : {"decoder.layer1", "decoder.layer2"})
    for (const char* w : {".self_attn.wo", ".self_attn.bo", ".ffn.w2", ".ffn.b2"})
      std::fill(z.at(std::string(l) + w).data.begin(), z.at(std::string(l) + w).data.end(), 0.0f);
  const std::string text = "ablate me";
  RunResult want = Model(c, z).run(text, "", RunOptions{});
  AblationSpec s;
  s.drop_layers = {1, 2};
  Model pruned = ablated_model(full, s);
  CHECK(pruned.config().n_layers == 2);
  RunResult got = pruned.run(text, "", RunOptions{});
  CHECK(max_abs_diff(got.output, want.output) < 1e-5);
}

TEST_CASE("DropHead equals a head whose values are zero", "[ablation]") {
  ModelConfig c = small_ablation_config(Architecture::Encoder, NormPosition::Post);
  c.n_layers = 2;
  c.output = OutputHead::None;
  ParamStore p = init_params(c, 4);
  // Independent route: zero the head's rows of W^V and b^V, so v_j = 0 for that head.
  ParamStore z = p;
  const int64_t dh = c.d_head(), d = c.d_model;
  for (auto [layer, head] : std::vector<std::pair<int, int>>{{0, 1}, {1, 3}}) {
    const std::string pre = "encoder.layer" + std::to_string(layer) + ".attn";
    for (int64_t r = head * dh; r < (head + 1) * dh; ++r) {
      for (int64_t col = 0; col < d; ++col) z.at(pre + ".wv").data[size_t(r * d + col)] = 0.0f;
      z.at(pre + ".bv").data[size_t(r)] = 0.0f;
    }
  }
  Model full(c, p);
  AblationSpec s;
  s.drop_heads = {{0, 1}, {1, 3}};
  RunResult got = ablated_model(full, s).run("heads", "", RunOptions{});
  RunResult want = Model(c, z).run("heads", "", RunOptions{});
  CHECK(max_abs_diff(got.output, want.output) < 1e-5);

  // The reported cosine, recomputed by hand from the two outputs.
  RunResult r = full.run("heads", "", RunOptions{});
  std::vector<double> per = compare_ablation(full, r, s, RunOptions{});
  const TracedArray* cos = r.trace.find("ablation.cosine");
  REQUIRE(cos != nullptr);
  REQUIRE(cos->tensor.shape == Shape{5});
  for (int64_t i = 0; i < 5; ++i) {
    double xy = 0, xx = 0, yy = 0;
    for (int64_t k = 0; k < d; ++k) {
      const double x = r.output.data[size_t(i * d + k)], y = want.output.data[size_t(i * d + k)];
      xy += x * y;
      xx += x * x;
      yy += y * y;
    }
    CHECK(per[size_t(i)] == Approx(xy / std::sqrt(xx * yy)).epsilon(1e-5));
  }
  REQUIRE(r.trace.find("ablation.heads") != nullptr);
  CHECK(r.trace.find("ablation.heads")->tensor.data == std::vector<float>{0, 1, 1, 3});
}

TEST_CASE("ablation KL of next-token distributions, recomputed by hand", "[ablation]") {
  ModelConfig c = small_ablation_config(Architecture::Decoder, NormPosition::Post);
  Model full(c, init_params(c, 6));
  AblationSpec s;
  s.layerdrop_rate = 0.5;  // layers 1 and 3
  RunResult r = full.run("kl test", "", RunOptions{});
  RunResult pruned = ablated_model(full, s).run("kl test", "", RunOptions{});
  std::vector<double> per = compare_ablation(full, r, s, RunOptions{});
  const int64_t V = r.output.shape[1];
  for (int64_t i = 0; i < r.output.shape[0]; ++i) {
    double zp = 0, zq = 0;
    for (int64_t v = 0; v < V; ++v) {
      zp += std::exp(double(r.output.data[size_t(i * V + v)]));
      zq += std::exp(double(pruned.output.data[size_t(i * V + v)]));
    }
    double kl = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double P = std::exp(double(r.output.data[size_t(i * V + v)])) / zp;
      const double Q = std::exp(double(pruned.output.data[size_t(i * V + v)])) / zq;
      kl += P * std::log(P / Q);
    }
    CHECK(per[size_t(i)] == Approx(kl).margin(1e-6).epsilon(1e-4));
    CHECK(per[size_t(i)] >= 0.0);
  }
  CHECK(r.trace.find("ablation.kl") != nullptr);
  CHECK(r.trace.find("ablation.layers")->tensor.data == std::vector<float>{1, 3});
  // Nothing dropped: KL exactly zero.
  RunResult again = full.run("kl test", "", RunOptions{});
  for (double v : compare_ablation(full, again, AblationSpec{}, RunOptions{})) CHECK(v == Approx(0.0).margin(1e-9));
}

TEST_CASE("ablation CLI lists parse, bad text rejected naming the flag", "[ablation]") {
  CHECK(parse_layer_list("1,3", "--drop-layers") == std::vector<int64_t>{1, 3});
  auto heads = parse_head_list("0:1,2:3", "--drop-heads");
  REQUIRE(heads.size() == 2);
  CHECK(heads[1] == std::pair<int64_t, int64_t>{2, 3});
  CHECK_THROWS_WITH(parse_layer_list("1,,3", "--drop-layers"), Catch::Contains("--drop-layers"));
  CHECK_THROWS_WITH(parse_layer_list("-1", "--drop-layers"), Catch::Contains("--drop-layers"));
  CHECK_THROWS_WITH(parse_head_list("1", "--drop-heads"), Catch::Contains("LAYER:HEAD"));
  ModelConfig c = small_ablation_config(Architecture::Decoder, NormPosition::Pre);
  Model m(c, init_params(c, 1));
  AblationSpec s;
  s.drop_heads = {{0, 4}};
  CHECK_THROWS_WITH(ablated_model(m, s), Catch::Contains("head 4"));
}
