// Direct logit attribution (core/analysis/logit_attribution.cpp) against independent oracles:
// the logits of Model::forward (the parts sum to them), a naive per-head computation with loops
// over the traced attention probabilities and the weights (the component's vector c, then
// ((c - mean c) / sigma * g) . w_U[t] as the formula reads), a head whose W^O slice is zero, the
// tiny-llama preset (RMSNorm, grouped-query heads, RoPE) and the models it must refuse.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/logit_attribution.h"
#include "core/formats/gguf_model.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/preset_test_util.h"
#include "tests/core/random_prenorm_models.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;
using Catch::Matchers::Contains;

namespace {

ModelConfig dla_config(NormKind norm, Positional positional) { return test::prenorm_two_layer_config(norm, positional); }

ParamStore dla_random_params(const ModelConfig& c, uint64_t seed) { return test::random_all_params(c, seed); }

const std::vector<int> kDlaIds = {72, 101, 108, 108, 111, 32, 119};

double dla_rel_err(double got, double want) { return std::fabs(got - want) / std::max(1.0, std::fabs(want)); }

// The oracle: head h of layer l at position i, from the run's traced probabilities and hidden
// states, with the component's vector formed first and the frozen norm applied to it.
double naive_head_part(const Model& m, const RunResult& run, int64_t l, int64_t h, size_t i, int token,
                       std::vector<double>* per_source) {
  const ModelConfig& c = m.config();
  const ParamStore& p = m.params();
  const size_t d = size_t(c.d_model), H = size_t(c.n_heads), dh = size_t(c.d_head()), L = kDlaIds.size();
  const size_t group = H / size_t(c.kv_heads());
  auto hidden = [&](int64_t layer) {
    const Tensor& t = run.trace.find("decoder.layer" + std::to_string(layer) + ".hidden")->tensor;
    naive::Matrix x(L, std::vector<double>(d));
    for (size_t a = 0; a < L; ++a)
      for (size_t k = 0; k < d; ++k) x[a][k] = t.data[a * d + k];
    return x;
  };
  const naive::Matrix x_in = l == 0 ? naive::embed(kDlaIds, c, p) : hidden(l - 1);
  const std::string pre = "decoder.layer" + std::to_string(l);
  const naive::Matrix v = naive::linear(naive::norm(x_in, c, p, pre + ".self_attn_norm"),
                                        p.at(pre + ".self_attn.wv"), naive::has(p, pre + ".self_attn.bv") ? &p.at(pre + ".self_attn.bv") : nullptr);
  const Tensor& probs = run.trace.find(pre + ".self_attn")->tensor;  // [H, L, L]
  const Tensor& wo = p.at(pre + ".self_attn.wo");                    // [d, H*dh]
  const naive::Matrix x_final = hidden(c.n_layers - 1);
  double mean = 0, var = 0;
  for (double x : x_final[i]) mean += x;
  mean /= double(d);
  for (double x : x_final[i]) var += (x - mean) * (x - mean);
  double sq = 0;
  for (double x : x_final[i]) sq += x * x;
  const double sigma = c.norm == NormKind::LayerNorm ? std::sqrt(var / double(d) + c.norm_eps)
                                                     : std::sqrt(sq / double(d) + c.norm_eps);  // RMSNorm
  double total = 0;
  if (per_source) per_source->assign(L, 0.0);
  for (size_t j = 0; j < L; ++j) {
    std::vector<double> cv(d, 0.0);  // a_ij v_j W^O_h^T
    const double a = probs.data[(size_t(h) * L + i) * L + j];
    for (size_t k = 0; k < d; ++k)
      for (size_t m2 = 0; m2 < dh; ++m2)
        cv[k] += a * v[j][(size_t(h) / group) * dh + m2] * wo.data[k * H * dh + size_t(h) * dh + m2];
    double cmean = 0;
    for (double x : cv) cmean += x;
    cmean /= double(d);
    double part = 0;
    for (size_t k = 0; k < d; ++k) {
      const double normed = c.norm == NormKind::LayerNorm ? (cv[k] - cmean) / sigma : cv[k] / sigma;
      part += normed * p.at("decoder.final_norm.gamma").data[k] * p.at("output.weight").data[size_t(token) * d + k];
    }
    if (per_source) (*per_source)[j] = part;
    total += part;
  }
  return total;
}

RunOptions dla_traced_options() {
  RunOptions o;
  o.trace = TraceOptions::none();
  o.trace.attention = true;
  o.trace.hidden = true;
  o.trace.maps = MapStorage::Stored;
  return o;
}

}  // namespace

TEST_CASE("DLA: the parts sum to the model's logit at every position", "[dla]") {
  const auto [norm, positional] = GENERATE(std::make_pair(NormKind::LayerNorm, Positional::Learned),
                                           std::make_pair(NormKind::RmsNorm, Positional::Sinusoidal),
                                           std::make_pair(NormKind::ScaleNorm, Positional::Learned));
  const ModelConfig c = dla_config(norm, positional);
  const Model m(c, dla_random_params(c, 11));
  const RunResult run = m.forward(tokens(kDlaIds), {}, RunOptions{});
  for (const int64_t token : {int64_t(-1), int64_t(65)}) {
    DlaRequest req;
    req.token = token;
    const LogitAttribution r = logit_attribution(m, tokens(kDlaIds), req);
    REQUIRE(r.positions.size() == kDlaIds.size());
    REQUIRE(r.head.size() == kDlaIds.size() * 2 * 4);
    for (size_t q = 0; q < kDlaIds.size(); ++q) {
      const int64_t t = r.tokens[q];
      if (token < 0) {  // the argmax of the run
        for (int64_t v = 0; v < 256; ++v) CHECK(run.output.data[q * 256 + size_t(v)] <= run.output.data[q * 256 + size_t(t)]);
      }
      const double logit = run.output.data[q * 256 + size_t(t)];
      CHECK(r.logit[q] == logit);
      CHECK(dla_rel_err(r.total[q], logit) < 1e-4);
      // Every kind of part is present (a wrong sum cannot hide in one term left at zero).
      CHECK(r.embed_tokens[q] != 0.0);
      CHECK(r.output_bias[q] != 0.0);
      CHECK(r.mlp[q * 2 + 1] != 0.0);
      CHECK(r.attn_bias[q * 2] != 0.0);
      if (norm == NormKind::LayerNorm) CHECK(r.norm_bias[q] != 0.0);
      else CHECK(r.norm_bias[q] == 0.0);
    }
  }
}

TEST_CASE("DLA: each head's part and its per-source split equal a naive computation", "[dla]") {
  const NormKind norm = GENERATE(NormKind::LayerNorm, NormKind::RmsNorm);
  const ModelConfig c = dla_config(norm, Positional::Learned);
  const Model m(c, dla_random_params(c, 5));
  const RunResult run = m.forward(tokens(kDlaIds), {}, dla_traced_options());
  DlaRequest req;
  req.token = 97;
  req.per_source = true;
  const LogitAttribution r = logit_attribution(m, tokens(kDlaIds), req);
  const size_t L = kDlaIds.size(), P = L;
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 4; ++h)
      for (size_t i = 0; i < L; ++i) {
        std::vector<double> want_src;
        const double want = naive_head_part(m, run, l, h, i, 97, &want_src);
        CHECK(r.head_part(int64_t(i), l, h) == Approx(want).epsilon(1e-4).margin(1e-6));
        for (size_t j = 0; j < L; ++j) {
          const double got = r.per_source[((size_t(l) * 4 + size_t(h)) * P + i) * L + j];
          CHECK(got == Approx(want_src[j]).epsilon(1e-4).margin(1e-6));
          if (j > i) CHECK(got == 0.0);  // causal: later keys carry nothing
        }
      }
}

TEST_CASE("DLA: a head whose W^O slice is zero contributes exactly 0", "[dla]") {
  const ModelConfig c = dla_config(NormKind::LayerNorm, Positional::Learned);
  ParamStore p = dla_random_params(c, 3);
  Tensor& wo = p.at("decoder.layer1.self_attn.wo");  // [16, 16]; head 2 is columns 8..11
  for (int64_t k = 0; k < 16; ++k)
    for (int64_t col = 8; col < 12; ++col) wo.data[size_t(k * 16 + col)] = 0.0f;
  const Model m(c, std::move(p));
  DlaRequest req;
  req.per_source = true;
  const LogitAttribution r = logit_attribution(m, tokens(kDlaIds), req);
  for (int64_t i = 0; i < int64_t(kDlaIds.size()); ++i) {
    CHECK(r.head_part(i, 1, 2) == 0.0);
    CHECK(r.head_part(i, 1, 1) != 0.0);
    CHECK(dla_rel_err(r.total[size_t(i)], r.logit[size_t(i)]) < 1e-4);
  }
}

TEST_CASE("DLA: tiny-llama (RMSNorm, grouped-query heads, RoPE) sums to its logits", "[dla][llama]") {
  const ModelConfig c = preset_config("tiny-llama");
  const Model m(c, init_params(c, c.seed));
  const std::vector<TokenInfo> src = m.tokenize("The quick brown fox", "").first;
  const RunResult run = m.forward(src, {}, RunOptions{});
  DlaRequest req;
  req.per_source = true;
  const LogitAttribution r = logit_attribution(m, src, req);
  const size_t L = src.size(), V = size_t(c.vocab_size);
  REQUIRE(r.heads == 4);
  for (size_t q = 0; q < L; ++q) {
    CHECK(dla_rel_err(r.total[q], run.output.data[q * V + size_t(r.tokens[q])]) < 1e-4);
    CHECK(r.embed_positions[q] == 0.0);  // RoPE adds nothing to the stream
    CHECK(r.attn_bias[q * 2] == 0.0);    // no biases in this preset
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {  // the per-source split sums to the head's part
        double s = 0;
        for (size_t j = 0; j < L; ++j) s += r.per_source[((size_t(l) * 4 + size_t(h)) * L + q) * L + j];
        CHECK(s == Approx(r.head_part(int64_t(q), l, h)).epsilon(1e-4).margin(1e-6));
      }
  }
}

TEST_CASE("DLA: a Q8_0 GGUF Llama (weights read in their file's encoding) sums to its logits", "[dla][gguf]") {
  // Both ways the CPU multiplies by quantized weights: the parts use the dequantized W^O and the
  // output rows; what the forward's products add beyond that lands in the MLP remainder, so the
  // sum still equals the logit.
  const atlas::QuantizedProducts mode = GENERATE(atlas::QuantizedProducts::Exact, atlas::QuantizedProducts::Int8Activations);
  const gguf_test::ScopedQuantizedProducts scoped(mode);
  gguf_test::Arch a;  // 2 layers, 4 query heads sharing 2 key/value heads, RoPE, RMSNorm
  const gguf_test::File f = gguf_test::make_file(a);
  GgufLoadOptions o;
  o.tokenizer = false;
  const Model m = load_gguf_model(gguf_test::write(f, "dla").string(), o);
  REQUIRE(m.params().at("decoder.layer0.self_attn.wo").packed);
  const std::vector<TokenInfo> src = tokens({3, 170, 5, 5, 9, 30, 259});
  const RunResult run = m.forward(src, {}, RunOptions{});
  DlaRequest req;
  req.per_source = true;
  const LogitAttribution r = logit_attribution(m, src, req);
  const size_t L = src.size(), V = size_t(a.vocab);
  for (size_t q = 0; q < L; ++q) {
    CHECK(dla_rel_err(r.total[q], run.output.data[q * V + size_t(r.tokens[q])]) < 1e-4);
    // The split recomputes v with the dequantized W_V: the forward's values only when its
    // products are exact too (int8 activations round v by about 1e-3).
    if (mode != atlas::QuantizedProducts::Exact) continue;
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) {
        double s = 0;
        for (size_t j = 0; j < L; ++j) s += r.per_source[((size_t(l) * 4 + size_t(h)) * L + q) * L + j];
        CHECK(s == Approx(r.head_part(int64_t(q), l, h)).epsilon(1e-4).margin(1e-5));
      }
  }
}

TEST_CASE("DLA: the logit difference is the difference of the two single-token results", "[dla]") {
  const ModelConfig c = dla_config(NormKind::LayerNorm, Positional::Learned);
  const Model m(c, dla_random_params(c, 9));
  DlaRequest a, b, diff;
  a.token = 40;
  b.token = 120;
  diff.token = 40;
  diff.against = 120;
  a.positions = b.positions = diff.positions = {6, 2};
  const LogitAttribution ra = logit_attribution(m, tokens(kDlaIds), a);
  const LogitAttribution rb = logit_attribution(m, tokens(kDlaIds), b);
  const LogitAttribution rd = logit_attribution(m, tokens(kDlaIds), diff);
  REQUIRE(rd.positions == std::vector<int64_t>{6, 2});
  auto same = [](const std::vector<double>& d, const std::vector<double>& x, const std::vector<double>& y) {
    REQUIRE(d.size() == x.size());
    for (size_t k = 0; k < d.size(); ++k) CHECK(d[k] == Approx(x[k] - y[k]).epsilon(1e-9).margin(1e-9));
  };
  same(rd.head, ra.head, rb.head);
  same(rd.mlp, ra.mlp, rb.mlp);
  same(rd.attn_bias, ra.attn_bias, rb.attn_bias);
  same(rd.embed_tokens, ra.embed_tokens, rb.embed_tokens);
  same(rd.embed_positions, ra.embed_positions, rb.embed_positions);
  same(rd.norm_bias, ra.norm_bias, rb.norm_bias);
  same(rd.output_bias, ra.output_bias, rb.output_bias);
  same(rd.total, ra.total, rb.total);
  same(rd.logit, ra.logit, rb.logit);
  for (size_t q = 0; q < 2; ++q) CHECK(dla_rel_err(rd.total[q], rd.logit[q]) < 1e-4);
}

TEST_CASE("DLA: refuses post-norm, encoder-decoder and other models naming the reason", "[dla]") {
  ModelConfig c = dla_config(NormKind::LayerNorm, Positional::Learned);
  c.norm_position = NormPosition::Post;
  const Model post(c, init_params(c, 1));
  CHECK_THROWS_WITH(logit_attribution(post, tokens(kDlaIds), {}), Contains("post-norm") && Contains("supported: pre-norm"));
  const ModelConfig ed = preset_config("tiny-encoder-decoder");
  CHECK_THAT(logit_attribution_refusal(ed), Contains("encoder-decoder"));
  const ModelConfig xl = preset_config("tiny-xl");
  CHECK_THAT(logit_attribution_refusal(xl), Contains("not made of standard layers"));
  CHECK(logit_attribution_refusal(preset_config("tiny-decoder")).empty());
  CHECK(logit_attribution_refusal(preset_config("tiny-llama")).empty());
}

TEST_CASE("DLA: bad positions, tokens and per-source requests are refused by name", "[dla]") {
  const ModelConfig c = dla_config(NormKind::LayerNorm, Positional::Learned);
  const Model m(c, init_params(c, 1));
  DlaRequest req;
  req.positions = {7};
  CHECK_THROWS_WITH(logit_attribution(m, tokens(kDlaIds), req), Contains("position 7 is outside the input's 7 tokens (0 to 6)"));
  req.positions = {-1};
  CHECK_THROWS_WITH(logit_attribution(m, tokens(kDlaIds), req), Contains("position -1"));
  req.positions = {};
  req.token = 256;
  CHECK_THROWS_WITH(logit_attribution(m, tokens(kDlaIds), req), Contains("token id 256 is outside the vocabulary (0 to 255)"));
  req.token = -1;
  req.against = 3;
  CHECK_THROWS_WITH(logit_attribution(m, tokens(kDlaIds), req), Contains("needs both tokens"));
  ModelConfig alibi = preset_config("alibi-lm");  // a mechanism in place of plain softmax
  alibi.n_layers = 1;
  alibi.d_model = 64;
  alibi.d_ff = 64;
  REQUIRE(logit_attribution_refusal(alibi).empty());
  const Model am(alibi, init_params(alibi, 1));
  DlaRequest ps;
  ps.per_source = true;
  CHECK_THROWS_WITH(logit_attribution(am, am.tokenize("abc", "").first, ps), Contains("plain softmax") && Contains("alibi"));
  ps.per_source = false;
  const LogitAttribution ar = logit_attribution(am, am.tokenize("abc", "").first, ps);  // the rest works
  CHECK(dla_rel_err(ar.total[2], ar.logit[2]) < 1e-4);
}

TEST_CASE("DLA: every preset it accepts sums to its logits; every other is refused with a reason", "[dla][presets]") {
  int accepted = 0;
  for (const PresetInfo& info : list_presets()) {
    INFO(info.name);
    const ModelConfig c = preset_test::small_preset_config(info.name);
    const std::string why = logit_attribution_refusal(c);
    if (!why.empty()) {
      CHECK_THAT(why, Contains("supported: pre-norm"));
      continue;
    }
    ++accepted;
    const Model m(c, init_params(c, 2));
    const std::vector<TokenInfo> src = is_patch_model(c) ? patch_input(c, preset_test::gradient_image()).tokens
                                                         : m.tokenize("Attribution", "").first;
    const RunResult run = m.forward(src, {}, RunOptions{});
    const LogitAttribution r = logit_attribution(m, src, {});
    const size_t V = size_t(run.output.shape[1]);
    for (size_t q = 0; q < src.size(); ++q)
      CHECK(dla_rel_err(r.total[q], run.output.data[q * V + size_t(r.tokens[q])]) < 1e-4);
  }
  CHECK(accepted >= 6);  // tiny-decoder, tiny-llama, tiny-mistral, tiny-gemma, tiny-vit, alibi-lm, ...
}
