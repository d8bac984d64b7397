// ViT: PIL-style bilinear resizing against hand-worked filter weights, and a
// ViTForImageClassification directory in Hugging Face's exact layout against a naive
// double-precision ViT written here from the published architecture (Dosovitskiy et al.;
// HF modeling_vit.py): Conv2d patch embedding, [CLS], learned positions, pre-norm layers
// x += Attn(LN(x)), x += FFN_gelu(LN(x)), final LayerNorm, classifier on [CLS].
#include <catch2/catch.hpp>

#include <cmath>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "tests/core/hf_test_util.h"
#include "core/formats/model_io.h"
#include "core/input/patch_input.h"
#include "core/model/presets.h"

using namespace atlas;
using namespace hf_test;
using Catch::Matchers::Contains;

namespace {

RgbImage grey_row(std::vector<int> values) {  // one row, R = G = B
  RgbImage im{1, int64_t(values.size()), {}};
  for (int v : values)
    for (int c = 0; c < 3; ++c) im.rgb.push_back(uint8_t(v));
  return im;
}

std::vector<int> red_of(const RgbImage& im) {
  std::vector<int> out;
  for (size_t i = 0; i < im.rgb.size(); i += 3) out.push_back(im.rgb[i]);
  return out;
}

struct TinyVit {
  int64_t d = 16, layers = 2, heads = 2, inner = 24, patch = 4, image = 8, labels = 3;
  int64_t grid() const { return image / patch; }
  int64_t tokens() const { return grid() * grid() + 1; }
};

HfTensors vit_tensors(const TinyVit& v) {
  HfTensors t;
  uint32_t seed = 300;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale = 1.0f) {
    t["vit." + name] = pattern(std::move(shape), seed++, scale);
  };
  add("embeddings.cls_token", {1, 1, v.d});
  add("embeddings.position_embeddings", {1, v.tokens(), v.d});
  add("embeddings.patch_embeddings.projection.weight", {v.d, 3, v.patch, v.patch}, 0.5f);
  add("embeddings.patch_embeddings.projection.bias", {v.d});
  for (int64_t i = 0; i < v.layers; ++i) {
    const std::string h = "encoder.layer." + std::to_string(i);
    for (const char* ln : {".layernorm_before", ".layernorm_after"}) {
      add(h + ln + ".weight", {v.d}, 4.0f);
      add(h + ln + ".bias", {v.d});
    }
    for (const char* lin : {".attention.attention.query", ".attention.attention.key",
                            ".attention.attention.value", ".attention.output.dense"}) {
      add(h + lin + ".weight", {v.d, v.d}, 2.0f);
      add(h + lin + ".bias", {v.d});
    }
    add(h + ".intermediate.dense.weight", {v.inner, v.d}, 2.0f);
    add(h + ".intermediate.dense.bias", {v.inner});
    add(h + ".output.dense.weight", {v.d, v.inner}, 2.0f);
    add(h + ".output.dense.bias", {v.d});
  }
  add("layernorm.weight", {v.d}, 4.0f);
  add("layernorm.bias", {v.d});
  t["classifier.weight"] = pattern({v.labels, v.d}, seed++, 2.0f);
  t["classifier.bias"] = pattern({v.labels}, seed++);
  return t;
}

const double kMean[3] = {0.485, 0.456, 0.406}, kStd[3] = {0.229, 0.224, 0.225};

// Classifier logits of every position [L, labels] for an image of exactly image x image.
Matrix naive_vit(const HfTensors& t, const TinyVit& v, const RgbImage& im) {
  auto T = [&](const std::string& n) -> const HfTensor& { return t.at("vit." + n); };
  const size_t d = size_t(v.d), L = size_t(v.tokens()), dh = d / size_t(v.heads);
  Matrix x(L, Vec(d));
  const HfTensor& conv = T("embeddings.patch_embeddings.projection.weight");  // [d, 3, P, P]
  for (size_t c = 0; c < d; ++c) x[0][c] = T("embeddings.cls_token").data[c];
  for (int64_t pr = 0; pr < v.grid(); ++pr)
    for (int64_t pc = 0; pc < v.grid(); ++pc) {
      Vec& e = x[size_t(1 + pr * v.grid() + pc)];
      for (size_t o = 0; o < d; ++o) {
        double s = T("embeddings.patch_embeddings.projection.bias").data[o];
        for (int64_t ch = 0; ch < 3; ++ch)
          for (int64_t ky = 0; ky < v.patch; ++ky)
            for (int64_t kx = 0; kx < v.patch; ++kx) {
              const int64_t y = pr * v.patch + ky, xx = pc * v.patch + kx;
              const double pixel = im.rgb[size_t((y * v.image + xx) * 3 + ch)] / 255.0;
              const double w = conv.data[size_t(((int64_t(o) * 3 + ch) * v.patch + ky) * v.patch + kx)];
              s += w * (pixel - kMean[ch]) / kStd[ch];
            }
        e[o] = s;
      }
    }
  for (size_t p = 0; p < L; ++p)
    for (size_t c = 0; c < d; ++c) x[p][c] += T("embeddings.position_embeddings").data[p * d + c];
  for (int64_t layer = 0; layer < v.layers; ++layer) {
    const std::string h = "encoder.layer." + std::to_string(layer);
    auto W = [&](const std::string& n) -> const HfTensor& { return T(h + n); };
    Matrix a(L), q(L), k(L), val(L);
    for (size_t p = 0; p < L; ++p) {
      a[p] = naive_layer_norm(x[p], W(".layernorm_before.weight"), W(".layernorm_before.bias"));
      q[p] = naive_linear(a[p], W(".attention.attention.query.weight"),
                          W(".attention.attention.query.bias"));
      k[p] = naive_linear(a[p], W(".attention.attention.key.weight"),
                          W(".attention.attention.key.bias"));
      val[p] = naive_linear(a[p], W(".attention.attention.value.weight"),
                            W(".attention.attention.value.bias"));
    }
    Matrix ctx(L, Vec(d, 0.0));
    for (size_t head = 0; head < size_t(v.heads); ++head)
      for (size_t i = 0; i < L; ++i) {
        Vec s(L);
        double mx = -1e300, z = 0;
        for (size_t j = 0; j < L; ++j) {
          double dot = 0;
          for (size_t c = 0; c < dh; ++c) dot += q[i][head * dh + c] * k[j][head * dh + c];
          s[j] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) z += (e = std::exp(e - mx));
        for (size_t j = 0; j < L; ++j)
          for (size_t c = 0; c < dh; ++c) ctx[i][head * dh + c] += s[j] / z * val[j][head * dh + c];
      }
    for (size_t p = 0; p < L; ++p) {
      Vec o = naive_linear(ctx[p], W(".attention.output.dense.weight"),
                           W(".attention.output.dense.bias"));
      for (size_t c = 0; c < d; ++c) x[p][c] += o[c];
      Vec b = naive_layer_norm(x[p], W(".layernorm_after.weight"), W(".layernorm_after.bias"));
      Vec f = naive_linear(b, W(".intermediate.dense.weight"), W(".intermediate.dense.bias"));
      for (double& e : f) e = 0.5 * e * (1 + std::erf(e / std::sqrt(2.0)));
      Vec g = naive_linear(f, W(".output.dense.weight"), W(".output.dense.bias"));
      for (size_t c = 0; c < d; ++c) x[p][c] += g[c];
    }
  }
  Matrix logits(L);
  for (size_t p = 0; p < L; ++p)
    logits[p] = naive_linear(naive_layer_norm(x[p], T("layernorm.weight"), T("layernorm.bias")),
                       t.at("classifier.weight"), t.at("classifier.bias"));
  return logits;
}

fs::path write_tiny_vit(const std::string& name, const TinyVit& v, const HfTensors& t,
                        const nlohmann::json& preprocessor) {
  fs::path dir = fresh_dir(name);
  nlohmann::json j = {{"model_type", "vit"}, {"architectures", {"ViTForImageClassification"}},
                      {"hidden_size", v.d}, {"num_hidden_layers", v.layers},
                      {"num_attention_heads", v.heads}, {"intermediate_size", v.inner},
                      {"hidden_act", "gelu"}, {"layer_norm_eps", 1e-12}, {"image_size", v.image},
                      {"patch_size", v.patch}, {"num_channels", 3}, {"qkv_bias", true},
                      {"id2label", {{"0", "cat"}, {"1", "dog"}, {"2", "ship"}}}};
  write_text(dir / "config.json", j.dump());
  if (!preprocessor.is_null()) write_text(dir / "preprocessor_config.json", preprocessor.dump());
  write_safetensors_file(dir / "model.safetensors", t);
  return dir;
}

nlohmann::json imagenet_preprocessor(int64_t size) {
  return {{"do_resize", true}, {"size", {{"height", size}, {"width", size}}}, {"resample", 2},
          {"do_rescale", true}, {"rescale_factor", 1.0 / 255}, {"do_normalize", true},
          {"image_mean", {0.485, 0.456, 0.406}}, {"image_std", {0.229, 0.224, 0.225}},
          {"image_processor_type", "ViTImageProcessor"}};
}

RgbImage test_image(int64_t size) {  // smooth colour gradients
  RgbImage im{size, size, {}};
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      im.rgb.push_back(uint8_t((x * 255) / (size - 1)));
      im.rgb.push_back(uint8_t((y * 255) / (size - 1)));
      im.rgb.push_back(uint8_t(((x + y) * 97) % 256));
    }
  return im;
}

}  // namespace

TEST_CASE("bilinear resizing matches PIL's triangle filter, worked by hand", "[vit]") {
  // Same size: every output pixel is its own source (weight 1 at distance 0).
  CHECK(red_of(resize_bilinear(grey_row({3, 200, 17, 90}), 1, 4)) == std::vector<int>{3, 200, 17, 90});
  // Upscaling 2 -> 4: ordinary linear interpolation at centres 0.25, 0.75, 1.25, 1.75.
  CHECK(red_of(resize_bilinear(grey_row({0, 100}), 1, 4)) == std::vector<int>{0, 25, 75, 100});
  // Downscaling 8 -> 4 widens the triangle to support 2: interior weights 1/8 3/8 3/8 1/8;
  // at the left edge the taps are 3/4 3/4 1/4 renormalised to 3/7 3/7 1/7 (right edge mirrored).
  const std::vector<int> src = {0, 80, 160, 240, 0, 40, 200, 120};
  const double s[8] = {0, 80, 160, 240, 0, 40, 200, 120};
  const std::vector<int> want = {
      int(std::floor((3 * s[0] + 3 * s[1] + s[2]) / 7 + 0.5)),
      int(std::floor((s[1] + 3 * s[2] + 3 * s[3] + s[4]) / 8 + 0.5)),
      int(std::floor((s[3] + 3 * s[4] + 3 * s[5] + s[6]) / 8 + 0.5)),
      int(std::floor((s[5] + 3 * s[6] + 3 * s[7]) / 7 + 0.5))};
  CHECK(red_of(resize_bilinear(grey_row(src), 1, 4)) == want);
  CHECK_THROWS_WITH(resize_bilinear(RgbImage{}, 4, 4), Contains("empty"));
}

TEST_CASE("a ViT directory in HF layout matches a naive ViT, preprocessing included", "[hf][vit]") {
  TinyVit v;
  const HfTensors t = vit_tensors(v);
  fs::path dir = write_tiny_vit("vit", v, t, imagenet_preprocessor(v.image));
  Model m = load_model(dir.string());
  CHECK(m.config().tokenizer.kind == TokenizerKind::Labels);
  CHECK(m.tokenizer().label(2) == "ship");
  CHECK(m.config().embeddings.patches.mean[1] == Approx(0.456f));
  const RgbImage im = test_image(v.image);  // already 8x8: resizing is the identity (above)
  const Matrix want = naive_vit(t, v, im);
  const PatchInput in = patch_input(m.config(), im);
  REQUIRE(in.tokens.size() == size_t(v.tokens()));
  CHECK(in.tokens[0].label == "[CLS]");
  CHECK(in.tokens[3].label == "1,0");
  RunOptions o;
  o.trace.attention = true;
  RunResult r = m.forward(in.tokens, {}, o);
  REQUIRE(r.is_logits);
  REQUIRE(r.output.shape == Shape{v.tokens(), v.labels});
  double worst = 0;
  for (size_t p = 0; p < size_t(v.tokens()); ++p)
    for (size_t c = 0; c < size_t(v.labels); ++c)
      worst = std::max(worst, std::abs(double(r.output.data[p * size_t(v.labels) + c]) - want[p][c]));
  INFO("largest logit difference " << worst);
  CHECK(worst < 1e-4);
  CHECK(r.trace.find("encoder.rollout"));
  CHECK_THROWS_WITH(m.run("a photo", "", {}), Contains("reads images, not text"));
  fs::remove_all(dir);
}

TEST_CASE("a ViT without preprocessor_config.json uses ViTImageProcessor's defaults", "[hf][vit]") {
  TinyVit v;
  fs::path dir = write_tiny_vit("vit-defaults", v, vit_tensors(v), nullptr);
  const ModelConfig c = load_model(dir.string()).config();
  CHECK(c.embeddings.patches.mean == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(c.embeddings.patches.std == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(c.embeddings.patches.rescale == Approx(1.0f / 255.0f));
  // A grey-128 image: (128/255 - 0.5) / 0.5 in every channel of every patch.
  const PatchInput in = patch_input(c, RgbImage{8, 8, std::vector<uint8_t>(8 * 8 * 3, 128)});
  CHECK(in.tokens[1].patch.size() == size_t(3 * 4 * 4));
  CHECK(in.tokens[1].patch[0] == Approx((128.0 / 255.0 - 0.5) / 0.5).margin(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("bad ViT directories are refused naming the file and the problem", "[hf][vit]") {
  TinyVit v;
  SECTION("unsupported resampling") {
    nlohmann::json p = imagenet_preprocessor(v.image);
    p["resample"] = 3;
    fs::path dir = write_tiny_vit("vit-bicubic", v, vit_tensors(v), p);
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Contains("preprocessor_config.json") && Contains("resample 3"));
    fs::remove_all(dir);
  }
  SECTION("a processor size that is not the model's image size") {
    fs::path dir = write_tiny_vit("vit-size", v, vit_tensors(v), imagenet_preprocessor(16));
    CHECK_THROWS_WITH(load_model(dir.string()), Contains("preprocessor_config.json") && Contains("16x16"));
    fs::remove_all(dir);
  }
  SECTION("position embeddings for another image size") {
    HfTensors t = vit_tensors(v);
    t["vit.embeddings.position_embeddings"] = pattern({1, 5 * 5 + 1, v.d}, 1);
    fs::path dir = write_tiny_vit("vit-pos", v, t, nullptr);
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Contains("position_embeddings") && Contains("[1, 26, 16]") && Contains("[1, 5, 16]"));
    fs::remove_all(dir);
  }
  SECTION("absurd sizes and values in config.json or preprocessor_config.json") {
    fs::path dir = write_tiny_vit("vit-absurd", v, vit_tensors(v), nullptr);
    nlohmann::json j = nlohmann::json::parse(read_text_file(dir / "config.json"));
    j["num_labels"] = 2000000000;
    j.erase("id2label");
    write_text(dir / "config.json", j.dump());
    CHECK_THROWS_WITH(read_hf_config(dir.string()), Contains("config.json") && Contains("num_labels"));
    j["num_labels"] = 3;
    j["image_size"] = int64_t(1) << 40;
    write_text(dir / "config.json", j.dump());
    CHECK_THROWS_WITH(read_hf_config(dir.string()), Contains("image_size"));
    j["image_size"] = v.image;
    write_text(dir / "config.json", j.dump());
    nlohmann::json p = imagenet_preprocessor(v.image);
    p["image_std"] = {0.2, 0.0, 0.2};
    write_text(dir / "preprocessor_config.json", p.dump());
    CHECK_THROWS_WITH(read_hf_config(dir.string()), Contains("std values must be finite and > 0"));
    p["image_std"] = {0.2, 0.2};
    write_text(dir / "preprocessor_config.json", p.dump());
    CHECK_THROWS_WITH(read_hf_config(dir.string()), Contains("image_std has 2 values for 3 channels"));
    fs::remove_all(dir);
  }
  SECTION("a truncated patch projection") {
    HfTensors t = vit_tensors(v);
    t.erase("vit.embeddings.patch_embeddings.projection.weight");
    fs::path dir = write_tiny_vit("vit-missing", v, t, nullptr);
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Contains("missing tensor embeddings.patch_embeddings.projection.weight"));
    fs::remove_all(dir);
  }
}

TEST_CASE("a ViTModel without classifier outputs hidden states", "[hf][vit]") {
  TinyVit v;
  HfTensors t = vit_tensors(v);
  t.erase("classifier.weight");
  t.erase("classifier.bias");
  t["vit.pooler.dense.weight"] = pattern({v.d, v.d}, 9);
  t["vit.pooler.dense.bias"] = pattern({v.d}, 10);
  fs::path dir = write_tiny_vit("vit-model", v, t, nullptr);
  HfCheckpoint c = read_hf_checkpoint(dir.string());
  CHECK(c.config.output == OutputHead::None);
  CHECK(c.skipped == std::vector<std::string>{"vit.pooler.dense.bias", "vit.pooler.dense.weight"});
  Model m(c.config, c.params);
  RunResult r = m.forward(patch_input(m.config(), test_image(8)).tokens, {}, {});
  CHECK_FALSE(r.is_logits);
  CHECK(r.output.shape == Shape{v.tokens(), v.d});
  fs::remove_all(dir);
}

TEST_CASE("google/vit-base-patch16-224 loads from synthetic weights with 86,567,656 parameters", "[hf][vit][full-size]") {
  // By hand: patch conv 768*3*16*16 + 768, CLS 768, positions 197*768; per layer
  // 4 (768^2 + 768) + 2 * 768*3072 + 3072 + 768 + 4*768; final LN 2*768; classifier 1000*768 + 1000.
  const int64_t embeddings = 768 * 3 * 16 * 16 + 768 + 768 + 197 * 768;
  const int64_t layer = 4 * (768 * 768 + 768) + 2 * (768 * 3072) + 3072 + 768 + 4 * 768;
  const int64_t total = embeddings + 12 * layer + 2 * 768 + 1000 * 768 + 1000;
  REQUIRE(total == 86567656);
  fs::path dir = fresh_dir("vit-base");
  nlohmann::json j = {{"model_type", "vit"}, {"hidden_size", 768}, {"num_hidden_layers", 12},
                      {"num_attention_heads", 12}, {"intermediate_size", 3072},
                      {"image_size", 224}, {"patch_size", 16}, {"num_channels", 3}};
  nlohmann::json labels = nlohmann::json::object();
  for (int i = 0; i < 1000; ++i) labels[std::to_string(i)] = "class " + std::to_string(i);
  j["id2label"] = labels;
  write_text(dir / "config.json", j.dump());
  {
    HfTensors t;
    auto zeros = [&](const std::string& n, std::vector<int64_t> s) {
      int64_t k = 1;
      for (auto e : s) k *= e;
      t[n] = HfTensor{s, std::vector<float>(size_t(k), 0.0f)};
    };
    zeros("vit.embeddings.cls_token", {1, 1, 768});
    zeros("vit.embeddings.position_embeddings", {1, 197, 768});
    zeros("vit.embeddings.patch_embeddings.projection.weight", {768, 3, 16, 16});
    zeros("vit.embeddings.patch_embeddings.projection.bias", {768});
    for (int i = 0; i < 12; ++i) {
      const std::string h = "vit.encoder.layer." + std::to_string(i);
      for (const char* n : {".attention.attention.query", ".attention.attention.key",
                            ".attention.attention.value", ".attention.output.dense"}) {
        zeros(h + n + ".weight", {768, 768});
        zeros(h + n + ".bias", {768});
      }
      zeros(h + ".intermediate.dense.weight", {3072, 768});
      zeros(h + ".intermediate.dense.bias", {3072});
      zeros(h + ".output.dense.weight", {768, 3072});
      zeros(h + ".output.dense.bias", {768});
      for (const char* n : {".layernorm_before", ".layernorm_after"}) {
        zeros(h + n + ".weight", {768});
        zeros(h + n + ".bias", {768});
      }
    }
    zeros("vit.layernorm.weight", {768});
    zeros("vit.layernorm.bias", {768});
    zeros("classifier.weight", {1000, 768});
    zeros("classifier.bias", {1000});
    write_safetensors_file(dir / "model.safetensors", t, "BF16");
  }
  HfCheckpoint c = read_hf_checkpoint(dir.string());
  int64_t n = 0;
  for (const auto& [name, t] : c.params) n += t.numel();
  CHECK(n == total);
  CHECK(parameter_count(c.config) == total);
  CHECK(c.config.max_positions == 197);
  CHECK(c.config.vocab_size == 1000);
  fs::remove_all(dir);
}

TEST_CASE("the tiny-vit preset classifies an image and refuses text", "[vit]") {
  Model m = load_model("preset:tiny-vit");
  const PatchInput in = patch_input(m.config(), test_image(50));  // resized 50 -> 32
  CHECK(in.resized.height == 32);
  CHECK(in.tokens.size() == 17);
  RunResult r = m.forward(in.tokens, {}, {});
  CHECK(r.output.shape == Shape{17, 10});
  std::vector<TokenInfo> short_input(in.tokens.begin(), in.tokens.begin() + 5);
  CHECK_THROWS_WITH(m.forward(short_input, {}, {}), Contains("exactly 17 tokens"));
}
