// ALiBi (Press, Smith & Lewis 2022; core/variants/alibi/) against independent oracles: the
// slopes written out by hand from the authors' get_slopes rule; the alibi_attention op's host
// reference against a naive double-precision loop; whole models against a naive forward in
// double built from tests/core/naive_transformer.h's pieces with its own biased attention; the
// tape kernel against finite differences and against the host op and the inference engine.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/model/attention_mechanism.h"
#include "core/model/estimate.h"
#include "core/model/model.h"
#include "core/model/prefix_cache.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/alibi/alibi_attention_op.h"
#include "core/variants/alibi/alibi_slopes.h"
#include "core/variants/alibi/train_alibi.h"
#include "tests/core/finite_differences.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/random_tensor.h"
#include "tests/core/train_test_util.h"
#include "tests/core/traced_array.h"

using namespace atlas;
using atlas::test::random_tensor;

namespace {

void check_slopes(int64_t heads, float bias_max, const std::vector<double>& exponents) {
  INFO(heads << " heads, bias_max " << bias_max);
  const std::vector<float> got = alibi_slopes(heads, bias_max);
  REQUIRE(got.size() == exponents.size());
  for (size_t h = 0; h < got.size(); ++h) {
    INFO("head " << h);
    CHECK(got[h] == Approx(std::exp2(exponents[h])).epsilon(1e-7));
  }
}

// One head set in double: e_ij = scale q_i.k_j - m_h |i + Lk - Lq - j| over allowed (i, j).
struct NaiveAlibi {
  std::vector<double> out, probs, scores;  // [Lq, H*dv], [H, Lq, Lk] x 2
};
NaiveAlibi naive_alibi(const Tensor& q, const Tensor& k, const Tensor& v, int64_t H,
                       const std::vector<double>& slopes, double scale,
                       const std::function<bool(int64_t, int64_t)>& allowed) {
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  NaiveAlibi r{std::vector<double>(size_t(lq * H * dv), 0.0), std::vector<double>(size_t(H * lq * lk), 0.0),
               std::vector<double>(size_t(H * lq * lk), -INFINITY)};
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t pos = i + (lk - lq);  // the query's key position
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        if (!allowed(i, j)) continue;
        double dot = 0;
        for (int64_t t = 0; t < dh; ++t) dot += double(q.data[size_t(i * H * dh + h * dh + t)]) * k.data[size_t(j * H * dh + h * dh + t)];
        const double s = scale * dot - slopes[size_t(h)] * double(pos > j ? pos - j : j - pos);
        r.scores[size_t((h * lq + i) * lk + j)] = s;
        mx = std::max(mx, s);
      }
      if (mx == -INFINITY) continue;
      double z = 0;
      for (int64_t j = 0; j < lk; ++j)
        if (allowed(i, j)) z += std::exp(r.scores[size_t((h * lq + i) * lk + j)] - mx);
      for (int64_t j = 0; j < lk; ++j) {
        const double a = allowed(i, j) ? std::exp(r.scores[size_t((h * lq + i) * lk + j)] - mx) / z : 0.0;
        r.probs[size_t((h * lq + i) * lk + j)] = a;
        for (int64_t t = 0; t < dv; ++t) r.out[size_t(i * H * dv + h * dv + t)] += a * v.data[size_t(j * H * dv + h * dv + t)];
      }
    }
  return r;
}

double worst_gap(const FloatBuffer& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t n = 0; n < got.size(); ++n) {
    if (std::isinf(want[n])) {
      CHECK(std::isinf(got[n]));
      CHECK(got[n] < 0);
      continue;
    }
    worst = std::max(worst, std::abs(double(got[n]) - want[n]));
  }
  return worst;
}

// --- a naive model forward with ALiBi (positional "none"), in double --------------------------

naive::Matrix naive_alibi_attention(const naive::Matrix& x, const ModelConfig& c, const ParamStore& p,
                                    const std::string& pre, bool causal, const std::vector<bool>& valid,
                                    std::vector<naive::Matrix>& probs) {
  using naive::P;
  auto bias = [&](const char* n) { return naive::has(p, pre + n) ? &P(p, pre + n) : nullptr; };
  const naive::Matrix q = naive::linear(x, P(p, pre + ".wq"), bias(".bq"));
  const naive::Matrix k = naive::linear(x, P(p, pre + ".wk"), bias(".bk"));
  const naive::Matrix v = naive::linear(x, P(p, pre + ".wv"), bias(".bv"));
  const size_t H = size_t(c.n_heads), dh = size_t(c.d_head()), L = x.size();
  // Press's rule for a power of two: m_h = 2^(-8 h / H).
  naive::Matrix concat = naive::zeros(L, H * dh);
  for (size_t h = 0; h < H; ++h) {
    const double m = std::exp2(-8.0 * double(h + 1) / double(H));
    naive::Matrix a = naive::zeros(L, L);
    for (size_t i = 0; i < L; ++i) {
      std::vector<double> e(L, -INFINITY);
      double mx = -INFINITY;
      for (size_t j = 0; j < L; ++j) {
        if ((causal && j > i) || !valid[j]) continue;
        double s = 0;
        for (size_t t = 0; t < dh; ++t) s += q[i][h * dh + t] * k[j][h * dh + t];
        e[j] = s / std::sqrt(double(dh)) - m * std::abs(double(i) - double(j));
        mx = std::max(mx, e[j]);
      }
      double z = 0;
      for (size_t j = 0; j < L; ++j) z += std::isinf(e[j]) ? 0.0 : std::exp(e[j] - mx);
      for (size_t j = 0; j < L; ++j) a[i][j] = std::isinf(e[j]) ? 0.0 : std::exp(e[j] - mx) / z;
      for (size_t t = 0; t < dh; ++t)
        for (size_t j = 0; j < L; ++j) concat[i][h * dh + t] += a[i][j] * v[j][h * dh + t];
    }
    probs.push_back(a);
  }
  return naive::linear(concat, P(p, pre + ".wo"), bias(".bo"));
}

// One stack (encoder or decoder) with tied output: logits and every layer's probabilities.
naive::Result naive_alibi_forward(const ModelConfig& c, const ParamStore& p, const std::vector<int>& ids) {
  const bool decoder = c.architecture == Architecture::Decoder;
  const std::string stack = decoder ? "decoder" : "encoder", attn = decoder ? ".self_attn" : ".attn";
  std::vector<bool> valid(ids.size());
  for (size_t j = 0; j < ids.size(); ++j) valid[j] = c.pad_id < 0 || ids[j] != c.pad_id;
  naive::Result r;
  naive::Matrix x = naive::embed(ids, c, p);  // positional "none": embeddings only
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string pre = stack + ".layer" + std::to_string(l);
    x = naive::sub(x, c, p, pre + attn + "_norm", [&](const naive::Matrix& h) {
      std::vector<naive::Matrix> probs;
      naive::Matrix out = naive_alibi_attention(h, c, p, pre + attn, decoder, valid, probs);
      r.attn.push_back(probs);
      return out;
    });
    x = naive::sub(x, c, p, pre + ".ffn_norm", [&](const naive::Matrix& h) { return naive::ffn(h, c, p, pre + ".ffn"); });
  }
  if (c.norm_position == NormPosition::Pre) x = naive::norm(x, c, p, stack + ".final_norm");
  REQUIRE(c.output == OutputHead::Tied);
  r.logits = naive::linear(x, naive::P(p, "embed.tokens"), nullptr);
  return r;
}

ModelConfig alibi_model(Architecture arch) {
  ModelConfig c = train::testing::small_config(arch);
  c.name = "alibi-test";
  c.n_heads = 4;
  c.positional = Positional::None;
  c.norm_position = NormPosition::Pre;
  c.attention_kind = SoftmaxAttention{};
  c.softmax()->alibi = AlibiConfig{};
  return c;
}

void check_model_against_naive(const ModelConfig& c, const std::vector<int>& ids) {
  const Model m(c, init_params(c, 7));
  RunOptions o;
  o.trace.scores = true;
  const RunResult r = m.forward(test::tokens(ids), {}, o);
  const naive::Result want = naive_alibi_forward(c, m.params(), ids);
  double worst = 0;
  const size_t V = want.logits[0].size();
  for (size_t i = 0; i < want.logits.size(); ++i)
    for (size_t t = 0; t < V; ++t) worst = std::max(worst, std::abs(want.logits[i][t] - r.output.data[i * V + t]));
  CHECK(worst < 2e-4);
  const bool decoder = c.architecture == Architecture::Decoder;
  const size_t L = ids.size();
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string name = std::string(decoder ? "decoder" : "encoder") + ".layer" + std::to_string(l) +
                             (decoder ? ".self_attn" : ".attn");
    const Tensor& a = test::traced(r, name);
    REQUIRE(a.shape == Shape{c.n_heads, int64_t(L), int64_t(L)});
    double gap = 0;
    for (size_t h = 0; h < size_t(c.n_heads); ++h)
      for (size_t i = 0; i < L; ++i)
        for (size_t j = 0; j < L; ++j)
          gap = std::max(gap, std::abs(want.attn[size_t(l)][h][i][j] - a.data[(h * L + i) * L + j]));
    INFO(name);
    CHECK(gap < 1e-5);
    // The layer's biases per distance d and head, traced for the views: -m_h d with the slopes
    // 2^-2, 2^-4, 2^-6, 2^-8 of 4 heads.
    const Tensor& bias = test::traced(r, name + ".alibi.distance_bias");
    REQUIRE(bias.shape == Shape{int64_t(L), 4});
    const float m[4] = {0.25f, 0.0625f, 0.015625f, 0.00390625f};
    for (size_t d = 0; d < L; ++d)
      for (size_t h = 0; h < 4; ++h) CHECK(bias.data[d * 4 + h] == -m[h] * float(d));
  }
}

}  // namespace

TEST_CASE("ALiBi slopes follow Press's rule, written out by hand", "[alibi]") {
  // A power of two: m_h = 2^(-8 h / H).
  check_slopes(8, 8.0f, {-1, -2, -3, -4, -5, -6, -7, -8});
  check_slopes(4, 8.0f, {-2, -4, -6, -8});
  check_slopes(1, 8.0f, {-8});
  // 12 heads: the 8 of 8 heads, then 2^(-8 k / 16) for k = 1, 3, 5, 7 (every other of 16 heads).
  check_slopes(12, 8.0f, {-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5});
  // 6 heads: the 4 of 4 heads, then 2^-1, 2^-3 (the 1st and 3rd of 8 heads).
  check_slopes(6, 8.0f, {-2, -4, -6, -8, -1, -3});
  // 3 heads: 2^-4, 2^-8, then 2^-2.
  check_slopes(3, 8.0f, {-4, -8, -2});
  // bias_max 16: m_h = 2^(-16 h / H).
  check_slopes(4, 16.0f, {-4, -8, -12, -16});
  check_slopes(6, 16.0f, {-4, -8, -12, -16, -2, -6});
  CHECK_THROWS_WITH(alibi_slopes(0, 8.0f), Catch::Contains("0 heads"));
  CHECK_THROWS_WITH(alibi_slopes(4, 0.0f), Catch::Contains("bias_max"));
}

TEST_CASE("the alibi_attention host reference equals a naive double loop", "[alibi]") {
  struct Case {
    const char* what;
    int64_t lq, lk, heads, dh, dv;
    bool causal, padding;
  };
  const Case cases[] = {
      {"encoder, 4 heads", 7, 7, 4, 3, 3, false, false},
      {"causal decoder, 3 heads (not a power of two)", 9, 9, 3, 4, 4, true, false},
      {"causal after a key prefix (Lq < Lk)", 4, 11, 2, 5, 5, true, false},
      {"key padding, 6 heads", 6, 6, 6, 2, 2, false, true},
      {"causal with padding, d_value != d_head", 5, 8, 2, 3, 6, true, true},
  };
  for (const Case& cs : cases) {
    INFO(cs.what);
    const Tensor q = random_tensor({cs.lq, cs.heads * cs.dh}, 1);
    const Tensor k = random_tensor({cs.lk, cs.heads * cs.dh}, 2);
    const Tensor v = random_tensor({cs.lk, cs.heads * cs.dv}, 3);
    AlibiAttentionArgs args;
    args.attn.heads = int(cs.heads);
    args.attn.scale = 0.6f;
    args.attn.mask.causal = cs.causal;
    args.attn.mask.causal_offset = cs.lk - cs.lq;
    std::vector<uint8_t> valid(size_t(cs.lk), 1);
    if (cs.padding) valid[size_t(cs.lk - 2)] = valid[0] = 0;
    if (cs.padding) args.attn.mask.key_valid = valid;
    args.slopes = alibi_slopes(cs.heads, 8.0f);
    const AlibiAttentionHost got = alibi_attention_reference(q, k, v, args);

    // The slopes of the oracle from the rule itself, by hand per case.
    std::vector<double> m;
    if (cs.heads == 4) m = {0.25, 0.0625, 0.015625, 0.00390625};
    if (cs.heads == 3) m = {1.0 / 16, 1.0 / 256, 0.25};
    if (cs.heads == 2) m = {1.0 / 16, 1.0 / 256};
    if (cs.heads == 6) m = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
    const int64_t prefix = cs.lk - cs.lq;
    const NaiveAlibi want = naive_alibi(q, k, v, cs.heads, m, 0.6, [&](int64_t i, int64_t j) {
      return (!cs.causal || j <= i + prefix) && valid[size_t(j)];
    });
    CHECK(worst_gap(got.scores.data, want.scores) < 2e-5);
    CHECK(worst_gap(got.probs.data, want.probs) < 2e-6);
    CHECK(worst_gap(got.out.data, want.out) < 1e-5);
  }
}

TEST_CASE("alibi_attention refuses shapes it cannot split, naming them", "[alibi][bad-input]") {
  AlibiAttentionArgs args;
  args.attn.heads = 2;
  args.slopes = alibi_slopes(2, 8.0f);
  const Tensor q({3, 4}), k({5, 4}), v({5, 4});
  CHECK_NOTHROW(alibi_attention_reference(q, k, v, args));
  CHECK_THROWS_WITH(alibi_attention_reference(q, Tensor({5, 6}), v, args),
                    Catch::Contains("alibi_attention: shapes q [3, 4] k [5, 6]"));
  CHECK_THROWS_WITH(alibi_attention_reference(q, k, Tensor({4, 4}), args), Catch::Contains("do not split into 2 heads"));
  args.slopes = alibi_slopes(4, 8.0f);
  CHECK_THROWS_WITH(alibi_attention_reference(q, k, v, args), Catch::Contains("4 slopes for 2 heads"));
  args.slopes = alibi_slopes(2, 8.0f);
  args.attn.mask.key_valid = {1, 1};
  CHECK_THROWS_WITH(alibi_attention_reference(q, k, v, args), Catch::Contains("mask sizes do not match 3 queries x 5 keys"));
}

TEST_CASE("a decoder and an encoder with ALiBi match a naive double forward", "[alibi]") {
  check_model_against_naive(alibi_model(Architecture::Decoder), {5, 9, 200, 31, 7, 7, 100, 3, 65});
  // Encoder: the symmetric bias -m |i - j|, with a padded key.
  check_model_against_naive(alibi_model(Architecture::Encoder), {1, 2, 3, 4, 5, 256, 7});
}

TEST_CASE("ALiBi is the self-attention mechanism, cross-attention stays plain, atlas info names the slopes",
          "[alibi][attention-mechanism]") {
  ModelConfig c = alibi_model(Architecture::EncoderDecoder);
  const AttentionMechanismModule* self = attention_mechanism(c, true);
  REQUIRE(self != nullptr);
  CHECK(std::string(self->name) == "alibi");
  CHECK(attention_mechanism(c, false) == nullptr);
  CHECK_FALSE(self->maps_on_demand(c));
  CHECK_THAT(describe_architecture(c), Catch::Contains("slopes m_1..m_4: 0.25 0.0625 0.015625 0.00390625\n"));
  c.attention_kind = SoftmaxAttention{};
  CHECK(attention_mechanism(c, true) == nullptr);
}

TEST_CASE("ALiBi's tape kernel backward matches finite differences", "[train][grad][alibi]") {
  using train::AttentionSpec;
  using train::Tape;
  for (bool causal : {false, true}) {
    Rng rng(11);
    train::ParamsT<double> p{{"q", train::fd::random_mat(rng, 6, 6)},
                             {"k", train::fd::random_mat(rng, 6, 6)},
                             {"v", train::fd::random_mat(rng, 6, 9)}};  // 3 heads, dh 2, dv 3
    const train::MatT<double> weights = train::fd::random_mat(rng, 6, 9);
    auto loss = [&](const train::ParamsT<double>& x, train::ParamsT<double>* grads) {
      Tape<double> t;
      AttentionSpec<double> spec;
      spec.heads = 3;
      spec.scale = 0.7;
      spec.causal = causal;
      spec.key_valid = {1, 1, 0, 1, 1, 1};  // one padded key
      const int out = train::alibi_attention(t, t.param("q", x.at("q")), t.param("k", x.at("k")),
                                             t.param("v", x.at("v")), spec, alibi_slopes(3, 8.0f));
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    };
    INFO("causal " << causal);
    CHECK(train::fd::check_gradients(p, loss) > 50);
  }
}

TEST_CASE("ALiBi's tape kernel forward equals the host op", "[train][alibi]") {
  const int64_t L = 7, H = 4, dh = 3;
  const Tensor q = random_tensor({L, H * dh}, 4), k = random_tensor({L, H * dh}, 5), v = random_tensor({L, H * dh}, 6);
  AlibiAttentionArgs args;
  args.attn.heads = int(H);
  args.attn.scale = 0.5f;
  args.attn.mask.causal = true;
  args.attn.mask.key_valid = {1, 1, 1, 1, 1, 0, 1};
  args.slopes = alibi_slopes(H, 8.0f);
  const AlibiAttentionHost want = alibi_attention_reference(q, k, v, args);
  train::Tape<double> t;
  train::AttentionSpec<double> spec;
  spec.heads = int(H);
  spec.scale = 0.5;
  spec.causal = true;
  spec.key_valid = args.attn.mask.key_valid;
  auto leaf = [&](const Tensor& x) { return t.constant(x.mat().cast<double>()); };
  const int out = train::alibi_attention(t, leaf(q), leaf(k), leaf(v), spec, args.slopes);
  const train::MatT<double>& got = t.value(out);
  double worst = 0;
  for (int64_t n = 0; n < want.out.numel(); ++n) worst = std::max(worst, std::abs(got.data()[n] - double(want.out.data[size_t(n)])));
  CHECK(worst < 1e-5);
  for (int64_t h = 0; h < H; ++h)  // the tape keeps each head's probabilities
    for (int64_t n = 0; n < L * L; ++n)
      CHECK(t.probs(out)[size_t(h)].data()[n] == Approx(want.probs.data[size_t(h * L * L + n)]).margin(1e-6));
}

TEST_CASE("training with ALiBi: the same logits as inference, and whole-model gradients", "[train][grad][alibi]") {
  train::testing::check_same_as_inference(alibi_model(Architecture::Decoder), {1, 2, 3, 4, 5, 6, 7});
  train::testing::check_same_as_inference(alibi_model(Architecture::Encoder), {5, 6, 7, 8, 9, 256});
  // Encoder-decoder: ALiBi in both stacks' self-attention, plain cross-attention.
  train::testing::check_same_as_inference(alibi_model(Architecture::EncoderDecoder), {65, 66, 67, 68}, {257, 65, 66});
  const ModelConfig c = alibi_model(Architecture::Decoder);
  train::ParamsT<double> params = train::testing::noisy_params(c);
  const train::Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
  CHECK(train::fd::check_gradients(params, train::testing::cross_entropy_loss(c, ex), 1e-6, 8) > 100);
}

TEST_CASE("an ALiBi decoder continuing a cached prefix gives the full forward's result", "[alibi][prefix_cache]") {
  const ModelConfig c = alibi_model(Architecture::Decoder);
  const Model m(c, init_params(c, 8));
  PrefixCache cache;
  RunOptions o;
  o.trace.scores = true;
  o.prefix_cache = &cache;
  const std::vector<int32_t> first = {5, 9, 200, 31, 7, 7}, longer = {5, 9, 200, 31, 7, 7, 100, 3, 65};
  m.forward(test::tokens(first), {}, o);
  const RunResult got = m.forward(test::tokens(longer), {}, o);
  // A causal ALiBi row depends on earlier keys only, so the cache applies (prefix_cache.h): the
  // 6 shared tokens come from it, and the biases use the queries' true positions past them.
  CHECK(cache.reused_tokens() == 6);
  RunOptions full;
  full.trace.scores = true;
  const RunResult want = m.forward(test::tokens(longer), {}, full);
  REQUIRE(got.trace.names() == want.trace.names());
  for (const TracedArray& w : want.trace.arrays) {
    INFO(w.name);
    const TracedArray* g = got.trace.find(w.name);
    REQUIRE(g->tensor.shape == w.tensor.shape);
    for (size_t n = 0; n < w.tensor.data.size(); ++n)
      if (!(std::isinf(w.tensor.data[n]) ? g->tensor.data[n] == w.tensor.data[n]
                                         : std::abs(g->tensor.data[n] - w.tensor.data[n]) <= 2e-5f))
        FAIL("differs at " << n);
  }
  double worst = 0;
  for (size_t n = 0; n < want.output.data.size(); ++n)
    worst = std::max(worst, double(std::abs(got.output.data[n] - want.output.data[n])));
  CHECK(worst < 2e-5);
}
