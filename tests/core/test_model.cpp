// The engine's forward pass against the naive oracle (naive_transformer.h), across the
// composition options of the foundation: stacks, norm placement and kind, positions,
// activations, padding and causal masks, tied/untied output.
#include <catch2/catch.hpp>

#include <atomic>

#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_transformer.h"
#include "core/model/presets.h"

using namespace atlas;

namespace {

ModelConfig small_config(Architecture arch) {
  ModelConfig c;
  c.name = "test";
  c.architecture = arch;
  c.vocab_size = 258;
  c.pad_id = 256;
  c.bos_id = arch == Architecture::EncoderDecoder ? 257 : -1;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.n_decoder_layers = arch == Architecture::EncoderDecoder ? 2 : 0;
  c.max_positions = 64;
  return c;
}

std::vector<TokenInfo> tokens_of(const std::vector<int>& ids) {
  std::vector<TokenInfo> t;
  for (int id : ids) t.push_back({id, std::to_string(id)});
  return t;
}

void check_model_against_oracle(const ModelConfig& c, const std::vector<int>& src,
                          const std::vector<int>& tgt, double tol = 2e-4) {
  Model model(c, init_params(c, 11));
  RunResult r = model.forward(tokens_of(src), tokens_of(tgt), RunOptions{});
  naive::Result want = naive::forward(c, model.params(), src, tgt);

  // Output (logits or hidden) element by element.
  REQUIRE(r.output.shape[0] == int64_t(want.logits.size()));
  REQUIRE(r.output.shape[1] == int64_t(want.logits[0].size()));
  double worst = 0;
  for (size_t i = 0; i < want.logits.size(); ++i)
    for (size_t k = 0; k < want.logits[i].size(); ++k)
      worst = std::max(worst, std::abs(want.logits[i][k] - r.output.data[i * want.logits[i].size() + k]));
  CHECK(worst < tol * std::max(1.0, std::abs(want.logits[0][0])) * 10);

  // Every traced attention layer, in execution order.
  std::vector<const TracedArray*> attn;
  for (const auto& a : r.trace.arrays) {
    const auto& n = a.name;
    if ((n.size() > 5 && n.compare(n.size() - 5, 5, ".attn") == 0) ||
        n.find("self_attn") != std::string::npos || n.find("cross_attn") != std::string::npos)
      if (n.find(".mask") == std::string::npos && n.find(".scores") == std::string::npos)
        attn.push_back(&a);
  }
  REQUIRE(attn.size() == want.attn.size());
  for (size_t layer = 0; layer < attn.size(); ++layer) {
    const Tensor& t = attn[layer]->tensor;
    const auto& w = want.attn[layer];
    REQUIRE(t.shape == Shape{c.n_heads, int64_t(w[0].size()), int64_t(w[0][0].size())});
    double err = 0;
    for (size_t h = 0; h < w.size(); ++h)
      for (size_t i = 0; i < w[h].size(); ++i)
        for (size_t j = 0; j < w[h][i].size(); ++j)
          err = std::max(err, std::abs(w[h][i][j] - t.data[(h * w[h].size() + i) * w[h][i].size() + j]));
    INFO(attn[layer]->name);
    CHECK(err < tol);
  }
}

}  // namespace

TEST_CASE("encoder, post-norm, ReLU, interleaved sinusoid matches the naive oracle", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  check_model_against_oracle(c, {72, 101, 108, 108, 111, 32, 33}, {});
}

TEST_CASE("decoder, pre-norm, learned positions, GELU tanh, untied output matches", "[model]") {
  ModelConfig c = small_config(Architecture::Decoder);
  c.norm_position = NormPosition::Pre;
  c.positional = Positional::Learned;
  c.activation = FfnActivation::GeluTanh;
  c.output = OutputHead::Untied;
  c.scale_embedding = false;
  c.init_std = 0.3f;
  check_model_against_oracle(c, {5, 9, 200, 7, 7, 1}, {});
}

TEST_CASE("encoder-decoder with cross-attention and GELU erf matches", "[model]") {
  ModelConfig c = small_config(Architecture::EncoderDecoder);
  c.activation = FfnActivation::Gelu;
  c.sinusoid_layout = SinusoidLayout::Concatenated;
  check_model_against_oracle(c, {10, 20, 30, 40, 50}, {257, 11, 12});
}

TEST_CASE("ScaleNorm + FixNorm, pre-norm, no positions, no biases matches", "[model]") {
  ModelConfig c = small_config(Architecture::Decoder);
  c.norm = NormKind::ScaleNorm;
  c.norm_position = NormPosition::Pre;
  c.fixnorm = true;
  c.positional = Positional::None;
  c.attention_bias = false;
  c.ffn_bias = false;
  check_model_against_oracle(c, {1, 2, 3, 4, 5, 6, 7, 8}, {});
}

TEST_CASE("decoder with rotary positions (RoPE, pairs i and i + r/2) matches the naive oracle",
          "[model][rope]") {
  ModelConfig c = small_config(Architecture::Decoder);
  c.positional = Positional::Rotary;
  c.norm_position = NormPosition::Pre;
  c.scale_embedding = false;
  c.init_std = 0.3f;
  check_model_against_oracle(c, {5, 9, 200, 7, 7, 1, 3, 3, 3, 3, 3, 3}, {});
}

TEST_CASE("encoder-decoder with adjacent-pair RoPE on 2 of 4 dims and linear scaling matches",
          "[model][rope]") {
  ModelConfig c = small_config(Architecture::EncoderDecoder);
  c.positional = Positional::Rotary;
  c.rope.pairing = RopePairing::Adjacent;
  c.rope.rotary_dims = 2;
  c.rope.theta = 100.0f;
  c.rope.scaling = RopeScaling::Linear;
  c.rope.factor = 4.0f;
  c.init_std = 0.3f;
  check_model_against_oracle(c, {10, 20, 30, 40, 50, 60}, {257, 11, 12, 13});
}

TEST_CASE("padding tokens are masked as keys, and encoder without output head", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  c.output = OutputHead::None;
  check_model_against_oracle(c, {65, 66, 67, 256, 256}, {});
  Model model(c, init_params(c, 3));
  RunResult r = model.forward(tokens_of({65, 66, 67, 256, 256}), {}, RunOptions{});
  const Tensor& a = r.trace.find("encoder.layer0.attn")->tensor;  // [4, 5, 5]
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t i = 0; i < 5; ++i) {
      CHECK(a.data[(h * 5 + i) * 5 + 3] == 0.0f);
      CHECK(a.data[(h * 5 + i) * 5 + 4] == 0.0f);
    }
  const Tensor& m = r.trace.find("encoder.layer0.attn.mask")->tensor;
  CHECK(m.data[0 * 5 + 3] == 0.0f);
  CHECK(m.data[4 * 5 + 2] == 1.0f);
}

TEST_CASE("pad_to pads with the pad token and the padded keys get zero weight", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  Model model(c, init_params(c, 3));
  RunOptions o;
  o.pad_to = 6;
  RunResult r = model.run("abc", "", o);
  REQUIRE(r.trace.source_tokens.size() == 6);
  CHECK(r.trace.source_tokens[5].id == 256);
  const Tensor& a = r.trace.find("encoder.layer1.attn")->tensor;
  CHECK(a.data[5] == 0.0f);  // head 0, query 0, key 5
}

TEST_CASE("attention rows sum to one over allowed keys and causal rows never see the future",
          "[model]") {
  Model model(preset_config("tiny-decoder"), init_params(preset_config("tiny-decoder"), 5));
  RunResult r = model.run("The quick brown fox jumps.", "", RunOptions{});
  const Tensor& a = r.trace.find("decoder.layer1.self_attn")->tensor;
  const int64_t H = a.shape[0], L = a.shape[1];
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) {
        float p = a.data[(h * L + i) * L + j];
        if (j > i) CHECK(p == 0.0f);
        s += p;
      }
      CHECK(s == Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("scores are traced on request with -inf where masked", "[model]") {
  ModelConfig c = small_config(Architecture::Decoder);
  Model model(c, init_params(c, 1));
  RunOptions o;
  o.trace = TraceOptions::all();
  RunResult r = model.run("abcd", "", o);
  const Tensor& s = r.trace.find("decoder.layer0.self_attn.scores")->tensor;
  CHECK(std::isinf(s.data[1]));  // query 0, key 1 is the future
  CHECK(std::isfinite(s.data[0]));
  REQUIRE(r.trace.find("decoder.layer1.hidden") != nullptr);
  CHECK(r.trace.find("decoder.layer1.hidden")->tensor.shape == Shape{4, 16});
}

TEST_CASE("tracing nothing records only the output", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  Model model(c, init_params(c, 1));
  RunOptions o;
  o.trace = TraceOptions::none();
  RunResult r = model.run("abcd", "", o);
  CHECK(r.trace.names() == std::vector<std::string>{"logits"});
}

TEST_CASE("bad inputs are refused with a message", "[model][errors]") {
  ModelConfig c = small_config(Architecture::Encoder);
  Model model(c, init_params(c, 1));
  CHECK_THROWS_WITH(model.run("", "", {}), Catch::Contains("empty"));
  CHECK_THROWS_WITH(model.run(std::string(65, 'x'), "", {}), Catch::Contains("max_positions 64"));
  CHECK_THROWS_WITH(model.run("abc", "target", {}), Catch::Contains("encoder-decoder"));
  ModelConfig d = small_config(Architecture::EncoderDecoder);
  d.bos_id = -1;
  Model ed(d, init_params(d, 1));
  CHECK_THROWS_WITH(ed.run("abc", "", {}), Catch::Contains("target text is empty"));
}

TEST_CASE("cancel stops the run between layers and progress reaches 1", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  Model model(c, init_params(c, 1));
  std::vector<double> seen;
  RunOptions o;
  o.progress = [&](double f, const std::string&) { seen.push_back(f); };
  model.run("abc", "", o);
  REQUIRE(seen.size() == 2);
  CHECK(seen.back() == Approx(1.0));
  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  CHECK_THROWS_AS(model.run("abc", "", o), Cancelled);
}

TEST_CASE("the same seed gives bit-identical outputs; another seed differs", "[model]") {
  ModelConfig c = small_config(Architecture::Encoder);
  Model a(c, init_params(c, 9)), b(c, init_params(c, 9)), other(c, init_params(c, 10));
  auto ra = a.run("seed", "", {}), rb = b.run("seed", "", {}), ro = other.run("seed", "", {});
  CHECK(ra.output.data == rb.output.data);
  CHECK(ra.output.data != ro.output.data);
}

TEST_CASE("Llama block: RMSNorm, SwiGLU, grouped-query heads (4 on 1) and RoPE match the oracle",
          "[model][llama]") {
  ModelConfig c = small_config(Architecture::Decoder);
  c.positional = Positional::Rotary;
  c.norm = NormKind::RmsNorm;
  c.norm_position = NormPosition::Pre;
  c.activation = FfnActivation::Silu;
  c.ffn.gated = true;
  c.attention.kv_heads = 1;
  c.attention_bias = false;
  c.ffn_bias = false;
  c.output = OutputHead::Untied;
  c.scale_embedding = false;
  c.init_std = 0.3f;
  check_model_against_oracle(c, {5, 9, 200, 7, 7, 1, 3, 3, 3, 3}, {});
}

TEST_CASE("heads wider and narrower than d_model / n_heads (attention.head_dim) match the oracle",
          "[model][llama]") {
  for (int64_t head_dim : {24, 3}) {  // small_config: d_model / n_heads is the default
    CAPTURE(head_dim);
    ModelConfig c = small_config(Architecture::Decoder);
    c.positional = Positional::Rotary;
    c.norm = NormKind::RmsNorm;
    c.norm_position = NormPosition::Pre;
    c.attention.head_dim = head_dim;
    c.attention.kv_heads = 1;
    c.init_std = 0.3f;
    if (head_dim % 2 != 0) c.rope.rotary_dims = 2;  // rotation needs pairs
    check_model_against_oracle(c, {5, 9, 200, 7, 7, 1, 3, 3}, {});
  }
}

TEST_CASE("Mistral-style sliding window of 3 keys with 2 key/value heads and q/k/v biases matches",
          "[model][llama]") {
  ModelConfig c = small_config(Architecture::Decoder);
  c.positional = Positional::Rotary;
  c.norm = NormKind::RmsNorm;
  c.norm_position = NormPosition::Pre;
  c.activation = FfnActivation::GeluTanh;  // GeGLU, Gemma's
  c.ffn.gated = true;
  c.attention.kv_heads = 2;
  c.attention.sliding_window = 3;
  c.init_std = 0.3f;
  check_model_against_oracle(c, {5, 9, 200, 7, 7, 1, 3, 3, 3, 3}, {});
  // The window is the mask: query 5 sees keys 3..5 only.
  Model model(c, init_params(c, 11));
  const RunResult r = model.forward(tokens_of({1, 2, 3, 4, 5, 6, 7}), {}, RunOptions{});
  const TracedArray* a = r.trace.find("decoder.layer0.self_attn");
  REQUIRE(a);
  for (int64_t j = 0; j < 7; ++j) {
    const float p = a->tensor.data[size_t(5 * 7 + j)];  // head 0, query 5
    INFO("key " << j);
    if (j >= 3 && j <= 5) CHECK(p > 0.0f);
    else CHECK(p == 0.0f);
  }
}
