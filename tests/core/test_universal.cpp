// Universal Transformer + ACT (core/variants/universal/universal.cpp) against a naive oracle written here from
// seed 000's equations (the shared block uses the vanilla pieces of naive_transformer.h), and
// the ACT invariants: weights per position sum to 1, N(t) <= M.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_transformer.h"
#include "core/model/presets.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

ModelConfig ut_config(Architecture arch, bool act) {
  ModelConfig c;
  c.name = "ut-test";
  c.architecture = arch;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.max_positions = 128;
  c.scale_embedding = false;
  c.init_std = 0.5f;
  c.stack = UniversalConfig{};
  c.universal()->act = act;
  c.universal()->max_steps = 5;
  c.universal()->halting_bias_init = -0.5f;
  return c;
}

// PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...)  (interleaved, seed 000)
double pe(double p, size_t k, size_t d) {
  const double angle = p / std::pow(10000.0, 2.0 * double(k / 2) / double(d));
  return k % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

struct ActOracle {
  naive::Matrix out;  // logits
  std::vector<std::vector<double>> weights;  // [step][i]
  std::vector<double> steps, remainder;
};

ActOracle ut_oracle(const ModelConfig& c, const ParamStore& p, const std::vector<int>& ids) {
  const bool dec = c.architecture == Architecture::Decoder;
  const std::string stack = dec ? "decoder" : "encoder", pre = stack + ".universal";
  const std::string an = dec ? ".self_attn" : ".attn";
  const size_t L = ids.size(), d = size_t(c.d_model);
  const auto& u = std::get<UniversalConfig>(c.stack);
  naive::Matrix state = naive::zeros(L, d), y = naive::zeros(L, d);
  for (size_t i = 0; i < L; ++i)
    for (size_t k = 0; k < d; ++k) state[i][k] = p.at("embed.tokens").data[size_t(ids[i]) * d + k];
  ActOracle o;
  o.steps.assign(L, 0);
  o.remainder.assign(L, 0);
  std::vector<double> cum(L, 0);
  std::vector<bool> halted(L, false);
  auto block = [&](const naive::Matrix& s) {
    naive::Matrix x = naive::sub(s, c, p, pre + an + "_norm", [&](const naive::Matrix& h) {
      return naive::attention(h, h, c, p, pre + an, [&](size_t i, size_t j) { return !dec || j <= i; }).out;
    });
    return naive::sub(x, c, p, pre + ".ffn_norm", [&](const naive::Matrix& h) { return naive::ffn(h, c, p, pre + ".ffn"); });
  };
  for (int64_t n = 1; n <= u.max_steps; ++n) {
    naive::Matrix s = state;
    for (size_t i = 0; i < L; ++i)
      for (size_t k = 0; k < d; ++k) s[i][k] += pe(double(i), k, d) + pe(double(n), k, d);
    if (!u.act) {
      state = block(s);
      continue;
    }
    bool any = false;
    for (bool h : halted) any |= !h;
    if (!any) break;
    std::vector<double> w(L, 0.0);
    std::vector<bool> running(L, false);
    for (size_t i = 0; i < L; ++i) {
      if (halted[i]) continue;
      running[i] = true;
      double a = p.at(pre + ".halt.b").data[0];
      for (size_t k = 0; k < d; ++k) a += p.at(pre + ".halt.w").data[k] * s[i][k];
      const double h = 1.0 / (1.0 + std::exp(-a));
      o.steps[i] += 1;
      if (cum[i] + h >= 1.0 - u.epsilon || n == u.max_steps) {
        o.remainder[i] = 1.0 - cum[i];
        w[i] = o.remainder[i];
        halted[i] = true;
      } else {
        w[i] = h;
        cum[i] += h;
      }
    }
    naive::Matrix t = block(s);
    for (size_t i = 0; i < L; ++i) {
      if (!running[i]) continue;
      for (size_t k = 0; k < d; ++k)
        y[i][k] = u.update == ActUpdate::Interpolate ? w[i] * t[i][k] + (1 - w[i]) * y[i][k] : y[i][k] + w[i] * t[i][k];
      state[i] = t[i];
    }
    o.weights.push_back(w);
  }
  naive::Matrix fin = u.act ? y : state;
  if (c.norm_position == NormPosition::Pre) fin = naive::norm(fin, c, p, stack + ".final_norm");
  o.out = naive::linear(fin, p.at("embed.tokens"), nullptr);
  return o;
}

void check(const ModelConfig& c, const std::vector<int>& ids, uint64_t seed = 3) {
  Model m(c, init_params(c, seed));
  RunResult r = m.forward(tokens(ids), {}, RunOptions{});
  ActOracle o = ut_oracle(c, m.params(), ids);
  const size_t V = o.out[0].size();
  double worst = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t v = 0; v < V; ++v) worst = std::max(worst, std::abs(o.out[i][v] - r.output.data[i * V + v]));
  CHECK(worst < 5e-4);
  if (!c.universal()->act) return;
  const Tensor& w = r.trace.find("act.weights")->tensor;
  REQUIRE(w.shape == Shape{int64_t(o.weights.size()), int64_t(ids.size())});
  for (size_t n = 0; n < o.weights.size(); ++n)
    for (size_t i = 0; i < ids.size(); ++i) CHECK(w.data[n * ids.size() + i] == Approx(o.weights[n][i]).margin(1e-5));
  const Tensor& steps = r.trace.find("act.steps")->tensor;
  for (size_t i = 0; i < ids.size(); ++i) CHECK(steps.data[i] == float(o.steps[i]));
}

}  // namespace

TEST_CASE("Universal Transformer + ACT matches the naive oracle, both update rules", "[universal]") {
  for (ActUpdate upd : {ActUpdate::Interpolate, ActUpdate::WeightedSum})
    for (NormPosition np : {NormPosition::Pre, NormPosition::Post}) {
      ModelConfig c = ut_config(Architecture::Decoder, true);
      c.universal()->update = upd;
      c.norm_position = np;
      check(c, {5, 9, 200, 31, 7, 7, 100});
    }
  ModelConfig e = ut_config(Architecture::Encoder, true);
  e.universal()->halting_bias_init = 0.0f;
  check(e, {1, 2, 3, 4, 5, 6});
}

TEST_CASE("Universal Transformer fixed-step mode matches the naive oracle", "[universal]") {
  ModelConfig c = ut_config(Architecture::Encoder, false);
  c.universal()->max_steps = 3;
  check(c, {10, 20, 30, 40});
  Model m(c, init_params(c, 1));
  RunResult r = m.forward(tokens({1, 2, 3}), {}, RunOptions{});
  for (int n = 1; n <= 3; ++n) CHECK(r.trace.find("encoder.step" + std::to_string(n) + ".attn") != nullptr);
  CHECK(r.trace.find("encoder.step4.attn") == nullptr);
  CHECK(r.trace.find("act.steps") == nullptr);
}

TEST_CASE("ACT weights of each position sum to 1, N(t) <= M, ponder = N + R", "[universal]") {
  for (float bias : {-3.0f, -0.5f, 0.5f, 6.0f}) {
    ModelConfig c = ut_config(Architecture::Decoder, true);
    c.universal()->halting_bias_init = bias;
    Model m(c, init_params(c, 11));
    RunResult r = m.forward(tokens({3, 1, 4, 1, 5, 9, 2, 6}), {}, RunOptions{});
    const Tensor& w = r.trace.find("act.weights")->tensor;
    const Tensor& h = r.trace.find("act.halting")->tensor;
    const Tensor& n = r.trace.find("act.steps")->tensor;
    const Tensor& rem = r.trace.find("act.remainder")->tensor;
    const Tensor& pon = r.trace.find("act.ponder")->tensor;
    const int64_t steps = w.shape[0], L = 8;
    REQUIRE(h.shape == w.shape);
    CHECK(steps <= 5);
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t t = 0; t < steps; ++t) s += w.data[size_t(t * L + i)];
      CHECK(s == Approx(1.0).epsilon(1e-5));
      CHECK(n.data[size_t(i)] >= 1.0f);
      CHECK(n.data[size_t(i)] <= 5.0f);
      CHECK(rem.data[size_t(i)] > 0.0f);
      CHECK(pon.data[size_t(i)] == Approx(n.data[size_t(i)] + rem.data[size_t(i)]));
    }
    if (bias == 6.0f)  // h = sigmoid(~6) >= 0.99 at once: every position halts at step 1, R = 1
      for (int64_t i = 0; i < L; ++i) CHECK(n.data[size_t(i)] == 1.0f);
    // Per-step attention rows sum to 1.
    const Tensor& a = r.trace.find("decoder.step1.self_attn")->tensor;
    for (int64_t hd = 0; hd < 4; ++hd)
      for (int64_t i = 0; i < L; ++i) {
        double s = 0;
        for (int64_t j = 0; j < L; ++j) s += a.data[size_t((hd * L + i) * L + j)];
        CHECK(s == Approx(1.0).epsilon(1e-5));
      }
  }
}

TEST_CASE("universal config: bad values rejected naming the key", "[universal][config]") {
  auto bad = [](const std::string& json, const std::string& key) {
    INFO(json);
    CHECK_THROWS_WITH(parse_config(json, "t"), Catch::Contains(key));
  };
  bad(R"({"universal": {"max_steps": 0}})", "universal.max_steps");
  bad(R"({"universal": {"epsilon": 0}})", "universal.epsilon");
  bad(R"({"universal": {"epsilon": 1}})", "universal.epsilon");
  bad(R"({"universal": {"epsilon": -0.5}})", "universal.epsilon");
  bad(R"({"universal": {"update": "sum"}})", "universal.update");
  bad(R"({"universal": {"enabled": true}, "architecture": "encoder-decoder", "n_decoder_layers": 1})",
      "universal.enabled");
  bad(R"({"universal": {"enabled": true}, "positional": "learned"})", "universal.enabled");
  ModelConfig c = parse_config(
      R"({"universal": {"enabled": true, "act": false, "max_steps": 7, "epsilon": 0.05, "update": "weighted_sum", "halting_bias_init": 2}})",
      "t");
  ModelConfig back = parse_config(config_to_json(c), "t");
  CHECK(back.universal()->max_steps == 7);
  CHECK_FALSE(back.universal()->act);
  CHECK(back.universal()->update == ActUpdate::WeightedSum);
  CHECK(back.universal()->epsilon == 0.05f);
  CHECK(back.universal()->halting_bias_init == 2.0f);
}

TEST_CASE("Universal Transformer presets load and run", "[universal]") {
  for (const char* name : {"tiny-ut-act", "tiny-ut-fixed"}) {
    ModelConfig c = preset_config(name);
    Model m(c, init_params(c, c.seed));
    RunResult r = m.run("hello", "", RunOptions{});
    CHECK(r.output.shape[0] == 5);
  }
  CHECK(preset_config("ut-act-base").universal()->max_steps == 12);
}
