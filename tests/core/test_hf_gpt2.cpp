// GPT-2 checkpoints in Hugging Face's exact layout (Conv1D [in, out] weights, fused c_attn,
// attn.bias buffers, optional "transformer." prefix) against a naive double-precision GPT-2
// written here from the published architecture (openai/gpt-2 src/model.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"
#include "core/model/generate.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "tests/core/hf_test_util.h"
#include "core/formats/model_io.h"

using namespace atlas;
using namespace hf_test;

namespace {

struct TinyGpt2 {
  int64_t vocab = kTinyGpt2Vocab, d = 16, layers = 2, heads = 4, ctx = 12, inner = 40;
};

HfTensors gpt2_tensors(const TinyGpt2& g, const std::string& prefix, bool buffers) {
  HfTensors t;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale = 1.0f) {
    t[prefix + name] = pattern(std::move(shape), seed++, scale);
  };
  add("wte.weight", {g.vocab, g.d});
  add("wpe.weight", {g.ctx, g.d});
  for (int64_t i = 0; i < g.layers; ++i) {
    const std::string h = "h." + std::to_string(i);
    add(h + ".ln_1.weight", {g.d}, 4.0f);
    add(h + ".ln_1.bias", {g.d});
    add(h + ".attn.c_attn.weight", {g.d, 3 * g.d}, 2.0f);
    add(h + ".attn.c_attn.bias", {3 * g.d});
    add(h + ".attn.c_proj.weight", {g.d, g.d});
    add(h + ".attn.c_proj.bias", {g.d});
    add(h + ".ln_2.weight", {g.d}, 4.0f);
    add(h + ".ln_2.bias", {g.d});
    add(h + ".mlp.c_fc.weight", {g.d, g.inner});
    add(h + ".mlp.c_fc.bias", {g.inner});
    add(h + ".mlp.c_proj.weight", {g.inner, g.d});
    add(h + ".mlp.c_proj.bias", {g.d});
    if (buffers) {  // the causal-mask buffers older checkpoints saved
      HfTensor mask{{1, 1, g.ctx, g.ctx}, std::vector<float>(size_t(g.ctx * g.ctx), 1.0f)};
      t[prefix + h + ".attn.bias"] = mask;
      t[prefix + h + ".attn.masked_bias"] = HfTensor{{}, {-1e4f}};
    }
  }
  add("ln_f.weight", {g.d}, 4.0f);
  add("ln_f.bias", {g.d});
  return t;
}

std::string gpt2_config_json(const TinyGpt2& g) {
  nlohmann::json j = {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}},
                      {"vocab_size", g.vocab}, {"n_embd", g.d}, {"n_layer", g.layers},
                      {"n_head", g.heads}, {"n_positions", g.ctx}, {"n_ctx", g.ctx},
                      {"n_inner", g.inner}, {"activation_function", "gelu_new"},
                      {"layer_norm_epsilon", 1e-5}, {"resid_pdrop", 0.1},
                      {"bos_token_id", 259}, {"eos_token_id", 259}};
  return j.dump(2);
}

fs::path write_gpt2_dir(const std::string& name, const TinyGpt2& g, const std::string& prefix,
                        const std::string& dtype = "F32") {
  fs::path dir = fresh_dir(name);
  write_text(dir / "config.json", gpt2_config_json(g));
  write_gpt2_tokenizer(dir);
  write_safetensors_file(dir / "model.safetensors", gpt2_tensors(g, prefix, true), dtype);
  return dir;
}

// Conv1D: y = x W + b with W [in, out].
Vec conv1d(const Vec& x, const HfTensor& w, const HfTensor& b) {
  Vec y(size_t(w.shape[1]));
  for (int64_t o = 0; o < w.shape[1]; ++o) {
    double s = b.data[size_t(o)];
    for (int64_t i = 0; i < w.shape[0]; ++i) s += x[size_t(i)] * w.at(i, o);
    y[size_t(o)] = s;
  }
  return y;
}

double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

// Logits [L, vocab] of GPT-2 on `ids`, straight from the HF tensors (no prefix).
Matrix naive_gpt2(const HfTensors& t, const TinyGpt2& g, const std::vector<int>& ids) {
  const size_t L = ids.size(), d = size_t(g.d), dh = d / size_t(g.heads);
  Matrix h(L, Vec(d));
  for (size_t p = 0; p < L; ++p)
    for (size_t c = 0; c < d; ++c)
      h[p][c] = t.at("wte.weight").at(ids[p], int64_t(c)) + t.at("wpe.weight").at(int64_t(p), int64_t(c));
  for (int64_t layer = 0; layer < g.layers; ++layer) {
    const std::string pre = "h." + std::to_string(layer);
    auto T = [&](const std::string& n) -> const HfTensor& { return t.at(pre + n); };
    Matrix q(L), k(L), v(L);
    for (size_t p = 0; p < L; ++p) {
      Vec qkv = conv1d(naive_layer_norm(h[p], T(".ln_1.weight"), T(".ln_1.bias"), 1e-5),
                       T(".attn.c_attn.weight"), T(".attn.c_attn.bias"));
      q[p].assign(qkv.begin(), qkv.begin() + long(d));
      k[p].assign(qkv.begin() + long(d), qkv.begin() + long(2 * d));
      v[p].assign(qkv.begin() + long(2 * d), qkv.end());
    }
    Matrix attn(L, Vec(d, 0.0));
    for (size_t head = 0; head < size_t(g.heads); ++head)
      for (size_t i = 0; i < L; ++i) {
        Vec s(i + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= i; ++j) {  // causal: keys j <= i
          double dot = 0;
          for (size_t c = 0; c < dh; ++c) dot += q[i][head * dh + c] * k[j][head * dh + c];
          s[j] = dot / std::sqrt(double(dh));
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (double& e : s) z += (e = std::exp(e - mx));
        for (size_t j = 0; j <= i; ++j)
          for (size_t c = 0; c < dh; ++c) attn[i][head * dh + c] += s[j] / z * v[j][head * dh + c];
      }
    for (size_t p = 0; p < L; ++p) {
      Vec o = conv1d(attn[p], T(".attn.c_proj.weight"), T(".attn.c_proj.bias"));
      for (size_t c = 0; c < d; ++c) h[p][c] += o[c];
      Vec f = conv1d(naive_layer_norm(h[p], T(".ln_2.weight"), T(".ln_2.bias"), 1e-5),
                     T(".mlp.c_fc.weight"), T(".mlp.c_fc.bias"));
      for (double& x : f) x = gelu_tanh(x);
      Vec m = conv1d(f, T(".mlp.c_proj.weight"), T(".mlp.c_proj.bias"));
      for (size_t c = 0; c < d; ++c) h[p][c] += m[c];
    }
  }
  Matrix logits(L, Vec(size_t(g.vocab)));
  for (size_t p = 0; p < L; ++p) {
    Vec x = naive_layer_norm(h[p], t.at("ln_f.weight"), t.at("ln_f.bias"), 1e-5);
    for (int64_t tok = 0; tok < g.vocab; ++tok) {  // lm_head tied to wte
      double s = 0;
      for (size_t c = 0; c < d; ++c) s += x[c] * t.at("wte.weight").at(tok, int64_t(c));
      logits[p][size_t(tok)] = s;
    }
  }
  return logits;
}

void check_gpt2_against_oracle(const Model& m, const TinyGpt2& g, double tol) {
  const std::vector<int> ids = {258, 72, 101, 108, 108, 111, 256, 33, 259};
  std::vector<TokenInfo> tokens;
  for (int id : ids) tokens.push_back({id, std::to_string(id)});
  RunResult r = m.forward(tokens, {}, {});
  REQUIRE(r.is_logits);
  REQUIRE(r.output.shape == Shape{int64_t(ids.size()), g.vocab});
  Matrix want = naive_gpt2(gpt2_tensors(g, "", false), g, ids);
  double worst = 0;
  for (size_t p = 0; p < ids.size(); ++p)
    for (int64_t tok = 0; tok < g.vocab; ++tok)
      worst = std::max(worst, std::abs(double(r.output.data[p * size_t(g.vocab) + size_t(tok)]) -
                                       want[p][size_t(tok)]));
  CHECK(worst < tol);
}

}  // namespace

TEST_CASE("a GPT-2 directory in HF layout matches a naive GPT-2", "[hf]") {
  TinyGpt2 g;
  for (const std::string prefix : {"", "transformer."}) {
    INFO("prefix " << prefix);
    fs::path dir = write_gpt2_dir("gpt2-" + std::to_string(prefix.size()), g, prefix);
    Model m = load_model(dir.string());
    CHECK(m.config().architecture == Architecture::Decoder);
    CHECK(m.config().tokenizer.kind == TokenizerKind::Gpt2Bpe);
    check_gpt2_against_oracle(m, g, 2e-4);
    fs::remove_all(dir);
  }
}

TEST_CASE("GPT-2 F16 and BF16 weights load to the same values", "[hf]") {
  TinyGpt2 g;
  for (const std::string dtype : {"F16", "BF16"}) {
    INFO(dtype);
    fs::path dir = write_gpt2_dir("gpt2-" + dtype, g, "transformer.", dtype);
    HfCheckpoint c = read_hf_checkpoint(dir.string());
    // HF c_attn [in, out]: engine wk[o][i] = c_attn[i][d + o] (k is the second third).
    const HfTensor want = gpt2_tensors(g, "", false).at("h.1.attn.c_attn.weight");
    const Tensor& wk = c.params.at("decoder.layer1.self_attn.wk");
    REQUIRE(wk.shape == Shape{g.d, g.d});
    for (int64_t o = 0; o < g.d; ++o)
      for (int64_t i = 0; i < g.d; ++i) REQUIRE(wk.data[size_t(o * g.d + i)] == want.at(i, g.d + o));
    CHECK(c.skipped.size() == size_t(2 * g.layers));  // attn.bias + attn.masked_bias per layer
    check_gpt2_against_oracle(Model(c.config, c.params), g, 2e-4);
    fs::remove_all(dir);
  }
}

TEST_CASE("a sharded GPT-2 checkpoint loads through its index", "[hf]") {
  TinyGpt2 g;
  fs::path dir = fresh_dir("gpt2-sharded");
  write_text(dir / "config.json", gpt2_config_json(g));
  write_gpt2_tokenizer(dir);
  HfTensors all = gpt2_tensors(g, "transformer.", false), a, b;
  nlohmann::json map = nlohmann::json::object();
  for (auto& [name, t] : all) {
    const bool first = name.find("h.1.") == std::string::npos;
    (first ? a : b)[name] = t;
    map[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors_file(dir / "model-00001-of-00002.safetensors", a);
  write_safetensors_file(dir / "model-00002-of-00002.safetensors", b, "BF16");
  write_text(dir / "model.safetensors.index.json",
             nlohmann::json({{"metadata", {{"total_size", 1}}}, {"weight_map", map}}).dump());
  check_gpt2_against_oracle(load_model(dir.string()), g, 2e-4);

  SECTION("a shard listed in the index is missing") {
    fs::remove(dir / "model-00002-of-00002.safetensors");
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Catch::Contains("model-00002-of-00002.safetensors: missing shard") &&
                          Catch::Contains("model.safetensors.index.json"));
  }
  SECTION("a truncated shard") {
    fs::path shard = dir / "model-00001-of-00002.safetensors";
    fs::resize_file(shard, fs::file_size(shard) - 10);
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Catch::Contains("model-00001-of-00002.safetensors") &&
                          Catch::Contains("truncated"));
  }
  SECTION("the index places a tensor in a shard that lacks it") {
    map["transformer.extra.weight"] = "model-00001-of-00002.safetensors";
    write_text(dir / "model.safetensors.index.json", nlohmann::json({{"weight_map", map}}).dump());
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Catch::Contains("has no tensor transformer.extra.weight"));
  }
  fs::remove_all(dir);
}

TEST_CASE("gpt2 124M loads from synthetic weights with 124,439,808 parameters", "[hf][full-size]") {
  // Real shapes of the published gpt2 config; BF16 halves the file, the values do not matter.
  TinyGpt2 g{50257, 768, 12, 12, 1024, 3072};
  fs::path dir = fresh_dir("gpt2-124m");
  nlohmann::json j = nlohmann::json::parse(gpt2_config_json(g));
  j.erase("n_inner");  // null/absent: 4 * n_embd, as in the published config
  write_text(dir / "config.json", j.dump());
  {
    HfTensors t;
    auto zeros = [&](const std::string& n, std::vector<int64_t> s) {
      int64_t k = 1;
      for (auto v : s) k *= v;
      t[n] = HfTensor{s, std::vector<float>(size_t(k), 0.0f)};
    };
    zeros("wte.weight", {50257, 768});
    zeros("wpe.weight", {1024, 768});
    for (int i = 0; i < 12; ++i) {
      const std::string h = "h." + std::to_string(i);
      for (const char* ln : {".ln_1", ".ln_2"}) {
        zeros(h + ln + ".weight", {768});
        zeros(h + ln + ".bias", {768});
      }
      zeros(h + ".attn.c_attn.weight", {768, 2304});
      zeros(h + ".attn.c_attn.bias", {2304});
      zeros(h + ".attn.c_proj.weight", {768, 768});
      zeros(h + ".attn.c_proj.bias", {768});
      zeros(h + ".mlp.c_fc.weight", {768, 3072});
      zeros(h + ".mlp.c_fc.bias", {3072});
      zeros(h + ".mlp.c_proj.weight", {3072, 768});
      zeros(h + ".mlp.c_proj.bias", {768});
    }
    zeros("ln_f.weight", {768});
    zeros("ln_f.bias", {768});
    write_safetensors_file(dir / "model.safetensors", t, "BF16");
  }
  HfCheckpoint c = read_hf_checkpoint(dir.string(), {.tokenizer = false});
  int64_t n = 0;
  for (const auto& [name, t] : c.params) n += t.numel();
  CHECK(n == 124439808);
  CHECK(parameter_count(c.config) == 124439808);
  CHECK(c.config.max_positions == 1024);
  CHECK(c.config.d_ff == 3072);
  fs::remove_all(dir);
}

TEST_CASE("greedy generation with a GPT-2 directory follows the naive model's argmax", "[hf]") {
  TinyGpt2 g;
  fs::path dir = write_gpt2_dir("gpt2-generate", g, "transformer.");
  Model m = load_model(dir.string());
  const HfTensors t = gpt2_tensors(g, "", false);
  // "hi the": pre-tokenised into "hi" and " the"; " the" merges to "\u0120the" (id 258).
  std::vector<int> ids = {104, 105, 258};
  GenerateOptions opt;
  opt.new_tokens = 5;
  GenerateResult r = generate(m, "hi the", opt, {});
  REQUIRE(r.prompt.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(r.prompt[i].id == ids[i]);
  REQUIRE(r.generated.size() == 5);
  for (const TokenInfo& tok : r.generated) {
    Matrix logits = naive_gpt2(t, g, ids);
    const Vec& last = logits.back();
    const int want = int(std::max_element(last.begin(), last.end()) - last.begin());
    CHECK(tok.id == want);
    ids.push_back(want);
  }
  // The final traced run covers prompt + generated tokens: causal attention [heads, 8, 8].
  const TracedArray* a = r.run.trace.find("decoder.layer1.self_attn");
  REQUIRE(a);
  CHECK(a->tensor.shape == Shape{g.heads, 8, 8});
  // Text: bytes of each token through the inverse of bytes_to_unicode (written here).
  const auto syms = byte_symbols();
  std::string want_text = "hi the";
  for (const TokenInfo& tok : r.generated) {
    if (tok.id < 256) want_text += char(tok.id);  // ids 0..255 are the bytes themselves here
    else if (tok.id == 256) want_text += " t";
    else if (tok.id == 257) want_text += "he";
    else if (tok.id == 258) want_text += " the";
    else want_text += "<|endoftext|>";
  }
  if (std::all_of(want_text.begin(), want_text.end(), [](char c) { return (unsigned char)c < 0x80; }))
    CHECK(r.text == want_text);

  SECTION("top-k probabilities are the softmax of the naive logits, best first") {
    std::vector<int> prompt = {104, 105, 258};
    Matrix logits = naive_gpt2(t, g, prompt);
    const Vec& last = logits.back();
    double mx = *std::max_element(last.begin(), last.end()), z = 0;
    for (double v : last) z += std::exp(v - mx);
    RunResult run = m.forward(r.prompt, {}, {});
    auto top = top_k(m, run.output, 2, 5);
    REQUIRE(top.size() == 5);
    for (size_t i = 0; i < 5; ++i) {
      CHECK(top[i].probability == Approx(std::exp(last[size_t(top[i].id)] - mx) / z).epsilon(1e-4));
      if (i > 0) CHECK(top[i].probability <= top[i - 1].probability);
    }
  }
  SECTION("sampling is reproducible per seed and near-greedy at a tiny temperature") {
    GenerateOptions s;
    s.new_tokens = 5;
    s.greedy = false;
    s.seed = 42;
    s.temperature = 1.0;
    GenerateResult a1 = generate(m, "hi the", s, {}), a2 = generate(m, "hi the", s, {});
    for (size_t i = 0; i < 5; ++i) CHECK(a1.generated[i].id == a2.generated[i].id);
    s.temperature = 1e-4;
    GenerateResult cold = generate(m, "hi the", s, {});
    for (size_t i = 0; i < 5; ++i) CHECK(cold.generated[i].id == r.generated[i].id);
  }
  SECTION("too many tokens for max_positions is refused with the room left") {
    opt.new_tokens = 10;
    CHECK_THROWS_WITH(generate(m, "hi the", opt, {}), Catch::Contains("at most 9 new tokens fit"));
  }
  fs::remove_all(dir);
}
