// Alignment score functions of seed 004 (core/variants/score_functions/score_functions.cpp), each evaluated by hand on
// 2-dimensional vectors written here, the masked softmax, and the Transformer hook against a
// naive per-head loop over the traced projected queries and keys.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/analysis/score_compare.h"
#include "core/variants/score_functions/score_functions.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

Mat rows(std::initializer_list<std::initializer_list<float>> r) {
  Mat m(int64_t(r.size()), int64_t(r.begin()->size()));
  int64_t i = 0;
  for (const auto& row : r) {
    int64_t j = 0;
    for (float v : row) m(i, j++) = v;
    ++i;
  }
  return m;
}

// q = [1, 2]; keys k1 = [3, 0], k2 = [0, 1].
const Mat kQ = rows({{1, 2}});
const Mat kK = rows({{3, 0}, {0, 1}});

}  // namespace

TEST_CASE("dot and scaled dot scores by hand", "[score]") {
  ScoreWeights w;
  Mat e = score_matrix(ScoreFunction::Dot, kQ, kK, w);
  CHECK(e(0, 0) == Approx(3.0));  // 1*3 + 2*0
  CHECK(e(0, 1) == Approx(2.0));  // 1*0 + 2*1
  e = score_matrix(ScoreFunction::ScaledDot, kQ, kK, w);
  CHECK(e(0, 0) == Approx(2.1213203));  // 3 / sqrt(2)
  CHECK(e(0, 1) == Approx(1.4142136));  // 2 / sqrt(2)
}

TEST_CASE("general score s^T W_a h by hand", "[score]") {
  ScoreWeights w;
  w.w = rows({{1, 0}, {2, 1}});  // q W = [1 + 4, 0 + 2] = [5, 2]
  const Mat e = score_matrix(ScoreFunction::General, kQ, kK, w);
  CHECK(e(0, 0) == Approx(15.0));  // [5, 2] . [3, 0]
  CHECK(e(0, 1) == Approx(2.0));   // [5, 2] . [0, 1]
}

TEST_CASE("additive score v^T tanh(W1 s + W2 h) by hand", "[score]") {
  ScoreWeights w;
  w.w1 = rows({{1, 0}, {0, 1}});   // W1 q = [1, 2]
  w.w2 = rows({{1, 1}, {0, -1}});  // W2 k1 = [3, 0], W2 k2 = [1, -1]
  w.v = rows({{1, -1}});
  const Mat e = score_matrix(ScoreFunction::Additive, kQ, kK, w);
  CHECK(e(0, 0) == Approx(0.0353017));  // tanh(4) - tanh(2)
  CHECK(e(0, 1) == Approx(0.2024334));  // tanh(2) - tanh(1)
}

TEST_CASE("cosine score with strength by hand", "[score]") {
  ScoreWeights w;
  Mat e = score_matrix(ScoreFunction::Cosine, kQ, kK, w);
  CHECK(e(0, 0) == Approx(0.4472136));  // 3 / (sqrt(5) * 3)
  CHECK(e(0, 1) == Approx(0.8944272));  // 2 / (sqrt(5) * 1)
  w.strength = 2.0f;
  e = score_matrix(ScoreFunction::Cosine, kQ, kK, w);
  CHECK(e(0, 1) == Approx(1.7888544));
  // A zero query scores 0, not NaN.
  e = score_matrix(ScoreFunction::Cosine, rows({{0, 0}}), kK, w);
  CHECK(e(0, 0) == 0.0f);
}

TEST_CASE("location score depends only on the query, extra rows of W_a dropped", "[score]") {
  ScoreWeights w;
  w.w = rows({{1, 0}, {0, 1}, {1, 1}});  // max_positions 3: W q = [1, 2, 3]
  Mat e = score_matrix(ScoreFunction::Location, kQ, kK, w);
  REQUIRE(e.cols() == 2);
  CHECK(e(0, 0) == Approx(1.0));
  CHECK(e(0, 1) == Approx(2.0));
  // Other keys, same scores.
  e = score_matrix(ScoreFunction::Location, kQ, rows({{-7, 5}, {9, 9}}), w);
  CHECK(e(0, 1) == Approx(2.0));
  // More keys than rows of W_a is an error, not a read past the end.
  CHECK_THROWS_AS(score_matrix(ScoreFunction::Location, kQ, Mat::Zero(4, 2), w), AtlasError);
}

TEST_CASE("dot-product scores reject mismatched sizes with a message", "[score]") {
  ScoreWeights w;
  CHECK_THROWS_WITH(score_matrix(ScoreFunction::Dot, kQ, Mat::Zero(2, 3), w),
                    Catch::Contains("equal sizes"));
}

TEST_CASE("masked softmax respects masks and never gives NaN", "[score]") {
  Mat e = rows({{1, 2, 3}, {1, 2, 3}});
  AttentionMask m;
  m.causal = true;  // row 0 sees key 0 only; row 1 keys 0 and 1
  Mat a = masked_softmax(e, m);
  CHECK(a(0, 0) == Approx(1.0));
  CHECK(a(0, 1) == 0.0f);
  CHECK(a(1, 0) == Approx(0.2689414));  // e^1 / (e^1 + e^2)
  CHECK(a(1, 1) == Approx(0.7310586));
  CHECK(a(1, 2) == 0.0f);
  CHECK(std::isinf(e(0, 2)));
  AttentionMask none;
  none.key_valid = {0, 0, 0};
  Mat e2 = rows({{1, 2, 3}});
  a = masked_softmax(e2, none);
  CHECK(a.sum() == 0.0f);
}

namespace {

ModelConfig score_model(ScoreFunction f, Architecture arch) {
  ModelConfig c;
  c.name = "score-test";
  c.architecture = arch;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 16;
  c.n_layers = 1;
  c.n_decoder_layers = arch == Architecture::EncoderDecoder ? 1 : 0;
  c.max_positions = 16;
  c.attention_kind = ScoreConfig{.function = f};
  c.score()->strength = 3.0f;
  return c;
}

// Naive per-(i, j) score of one head from the equations, weights read straight from the store.
double naive_score(ScoreFunction f, const ParamStore& p, const std::string& prefix, int64_t h,
                   const std::vector<double>& q, const std::vector<double>& k, int64_t j,
                   float strength) {
  const size_t d = q.size();
  double dot = 0, nq = 0, nk = 0;
  for (size_t x = 0; x < d; ++x) dot += q[x] * k[x], nq += q[x] * q[x], nk += k[x] * k[x];
  switch (f) {
    case ScoreFunction::Dot: return dot;
    case ScoreFunction::Cosine: return strength * dot / std::sqrt(nq * nk);
    case ScoreFunction::General: {
      const Tensor& w = p.at(prefix + ".score.w");  // [H, d, d]
      double s = 0;
      for (size_t a = 0; a < d; ++a)
        for (size_t b = 0; b < d; ++b) s += q[a] * w.data[size_t(h) * d * d + a * d + b] * k[b];
      return s;
    }
    case ScoreFunction::Additive: {
      const Tensor &w1 = p.at(prefix + ".score.w1"), &w2 = p.at(prefix + ".score.w2"),
                   &v = p.at(prefix + ".score.v");
      const size_t da = size_t(v.shape[1]);
      double s = 0;
      for (size_t r = 0; r < da; ++r) {
        double u = 0;
        for (size_t x = 0; x < d; ++x)
          u += w1.data[size_t(h) * da * d + r * d + x] * q[x] + w2.data[size_t(h) * da * d + r * d + x] * k[x];
        s += v.data[size_t(h) * da + r] * std::tanh(u);
      }
      return s;
    }
    case ScoreFunction::Location: {
      const Tensor& w = p.at(prefix + ".score.w");  // [H, max_positions, d]
      const size_t P = size_t(w.shape[1]);
      double s = 0;
      for (size_t x = 0; x < d; ++x) s += w.data[size_t(h) * P * d + size_t(j) * d + x] * q[x];
      return s;
    }
    default: return dot / std::sqrt(double(d));
  }
}

void check_layer_against_naive(ScoreFunction f, const Model& m, const Trace& tr, const std::string& name) {
  const ModelConfig& c = m.config();
  const Tensor& q = tr.find(name + ".q")->tensor;
  const Tensor& k = tr.find(name + ".k")->tensor;
  const Tensor& mask = tr.find(name + ".mask")->tensor;
  const Tensor& probs = tr.find(name)->tensor;
  const int64_t H = c.n_heads, dh = c.d_head(), lq = q.shape[0], lk = k.shape[0];
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      std::vector<double> e(static_cast<size_t>(lk));
      double mx = -1e300, z = 0;
      std::vector<double> qi(static_cast<size_t>(dh));
      for (int64_t x = 0; x < dh; ++x) qi[size_t(x)] = q.data[size_t(i * H * dh + h * dh + x)];
      for (int64_t j = 0; j < lk; ++j) {
        std::vector<double> kj(static_cast<size_t>(dh));
        for (int64_t x = 0; x < dh; ++x) kj[size_t(x)] = k.data[size_t(j * H * dh + h * dh + x)];
        e[size_t(j)] = naive_score(f, m.params(), name, h, qi, kj, j, c.score()->strength);
        if (mask.data[size_t(i * lk + j)] != 0) mx = std::max(mx, e[size_t(j)]);
      }
      for (int64_t j = 0; j < lk; ++j)
        if (mask.data[size_t(i * lk + j)] != 0) z += std::exp(e[size_t(j)] - mx);
      double row = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const double want = mask.data[size_t(i * lk + j)] != 0 ? std::exp(e[size_t(j)] - mx) / z : 0.0;
        const float got = probs.data[size_t((h * lq + i) * lk + j)];
        CHECK(got == Approx(want).margin(1e-5));
        row += got;
      }
      CHECK(row == Approx(1.0).margin(1e-5));
    }
}

}  // namespace

TEST_CASE("every score function in a model matches a naive loop, masks respected", "[score]") {
  for (ScoreFunction f : {ScoreFunction::Dot, ScoreFunction::General, ScoreFunction::Additive,
                          ScoreFunction::Cosine, ScoreFunction::Location}) {
    DYNAMIC_SECTION(score_function_name(f)) {
      ModelConfig c = score_model(f, Architecture::EncoderDecoder);
      Model m(c, init_params(c, 7));
      RunOptions o;
      o.trace.qk = true;
      RunResult r = m.forward(tokens({5, 6, 7, 8}), tokens({1, 2, 3}), o);
      check_layer_against_naive(f, m, r.trace, "encoder.layer0.attn");
      check_layer_against_naive(f, m, r.trace, "decoder.layer0.self_attn");  // causal mask
      check_layer_against_naive(f, m, r.trace, "decoder.layer0.cross_attn");
      // The causal mask of decoder self-attention: no probability on a future key.
      const Tensor& self = r.trace.find("decoder.layer0.self_attn")->tensor;
      CHECK(self.data[0 * 3 + 1] == 0.0f);
    }
  }
}

TEST_CASE("scaled_dot stays the default and adds no tensors", "[score]") {
  ModelConfig c = score_model(ScoreFunction::ScaledDot, Architecture::Encoder);
  for (const auto& s : param_specs(c)) CHECK(s.name.find(".score.") == std::string::npos);
  c.attention_kind = ScoreConfig{.function = ScoreFunction::General};
  bool found = false;
  for (const auto& s : param_specs(c))
    if (s.name == "encoder.layer0.attn.score.w") found = s.shape == Shape{2, 4, 4};
  CHECK(found);
}

TEST_CASE("score config errors name the key", "[score]") {
  const std::string base = R"({"architecture": "encoder", "d_model": 8, "n_heads": 2, )";
  CHECK_THROWS_WITH(parse_config(base + R"("score": {"function": "bogus"}})", "t"),
                    Catch::Contains("score.function"));
  CHECK_THROWS_WITH(parse_config(base + R"("score": {"strength": 0}})", "t"),
                    Catch::Contains("score.strength"));
  CHECK_THROWS_WITH(parse_config(base + R"("score": {"functon": "dot"}})", "t"),
                    Catch::Contains("function"));
  CHECK_THROWS_WITH(parse_config(base + R"("score": {"function": "dot"}, "shaw": {"enabled": true}})", "t"),
                    Catch::Contains("score.function"));
  const ModelConfig ok = parse_config(base + R"("score": {"function": "cosine", "strength": 5}})", "t");
  CHECK(ok.score()->function == ScoreFunction::Cosine);
  CHECK(parse_config(config_to_json(ok), "t").score()->strength == 5.0f);  // round trip
}

TEST_CASE("side-by-side comparison: the model's own function reproduces its attention", "[score]") {
  // Additive model: the comparison's additive entry (the model's weights) must equal the head's
  // traced attention; general must say it used seeded weights; scaled_dot must equal a naive
  // softmax(q k^T / sqrt(d_head)) over the traced q, k.
  ModelConfig c = score_model(ScoreFunction::Additive, Architecture::EncoderDecoder);
  Model m(c, init_params(c, 5));
  const RunResult traced = m.forward(tokens({5, 6, 7, 8}), tokens({1, 2, 3}), [] {
    RunOptions o;
    o.trace.qk = true;
    return o;
  }());
  const RunResult r =
      m.forward(tokens({5, 6, 7, 8}), tokens({1, 2, 3}), score_comparison_options(m));
  const ScoreComparison cmp = compare_score_functions(m, r.trace, "decoder.layer0.self_attn", 0, 1, 0.0f);
  REQUIRE(cmp.entries.size() == 6);
  const Tensor& own = traced.trace.find("decoder.layer0.self_attn")->tensor;  // [2, 3, 3]
  const Tensor& q = r.trace.find("decoder.layer0.self_attn.q")->tensor;
  const Tensor& k = r.trace.find("decoder.layer0.self_attn.k")->tensor;
  for (const auto& e : cmp.entries) {
    if (e.function == ScoreFunction::Additive) {
      CHECK(e.models_own);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) CHECK(e.probs(i, j) == Approx(own.data[size_t(9 + i * 3 + j)]).margin(1e-5));
    }
    if (e.function == ScoreFunction::General) CHECK_THAT(e.note, Catch::Contains("seeded"));
    if (e.function == ScoreFunction::ScaledDot)
      for (int i = 0; i < 3; ++i) {
        double mx = -1e300, z = 0, s[3];
        for (int j = 0; j <= i; ++j) {  // causal
          s[j] = 0;
          for (int x = 0; x < 4; ++x) s[j] += double(q.data[size_t(i * 8 + 4 + x)]) * k.data[size_t(j * 8 + 4 + x)];
          s[j] /= 2.0;  // sqrt(d_head = 4)
          mx = std::max(mx, s[j]);
        }
        for (int j = 0; j <= i; ++j) z += std::exp(s[j] - mx);
        for (int j = 0; j < 3; ++j)
          CHECK(e.probs(i, j) == Approx(j <= i ? std::exp(s[j] - mx) / z : 0.0).margin(1e-5));
      }
  }
  CHECK_THROWS_WITH(compare_score_functions(m, r.trace, "", 0, 5, 0.0f), Catch::Contains("head 5"));
  CHECK_THROWS_WITH(compare_score_functions(m, r.trace, "encoder.layer7.attn", 0, 0, 0.0f),
                    Catch::Contains("encoder.layer0.attn"));
}
