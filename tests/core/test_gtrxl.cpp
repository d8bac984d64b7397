// GTrXL (core/variants/gtrxl/gtrxl.cpp on top of core/variants/transformer_xl/transformer_xl.cpp) against independent oracles: the gate
// equations evaluated by naive loops (tests/core/naive_gtrxl.h) on matrices built here, a
// closed-form identity limit derived from the GRU equation, and a naive segment-by-segment
// gated XL model.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/estimate.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/model/model.h"
#include "tests/core/naive_gtrxl.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

ModelConfig gtrxl_config(GateType type, bool reorder, NormPosition np, int64_t seg, int64_t mem) {
  ModelConfig c;
  c.name = "gtrxl-test";
  c.architecture = Architecture::Decoder;
  c.vocab_size = 256;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 12;
  c.n_layers = 2;
  c.max_positions = 1024;
  c.positional = Positional::None;
  c.scale_embedding = false;
  c.norm_position = np;
  c.init_std = 0.5f;
  c.stack = XLConfig{};
  c.xl()->segment_length = seg;
  c.xl()->mem_len = mem;
  c.xl()->gating = GatingConfig{};
  c.gating()->type = type;
  c.gating()->identity_map_reorder = reorder;
  return c;
}

const char* type_name(GateType t) {
  switch (t) {
    case GateType::None: return "none";
    case GateType::Input: return "input";
    case GateType::Output: return "output";
    case GateType::Highway: return "highway";
    case GateType::Gru: return "gru";
  }
  return "?";
}

// Deterministic, non-trivial values (no generator shared with the engine).
float sine_value(size_t i, float scale) { return scale * std::sin(0.7f * float(i) + 0.3f); }

void fill_pattern(Tensor& t, float scale, size_t salt) {
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = sine_value(i + 13 * salt, scale);
}

Mat to_mat(const naive::Matrix& m) {
  Mat r(m.size(), m[0].size());
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t k = 0; k < m[i].size(); ++k) r(long(i), long(k)) = float(m[i][k]);
  return r;
}

const std::vector<int> kGtrxlIds = {3, 17, 5, 9, 30, 1, 12, 7};

}  // namespace

TEST_CASE("gtrxl gates: each equation against a naive loop on hand-built matrices", "[gtrxl]") {
  const size_t L = 3, d = 4;
  naive::Matrix x = naive::zeros(L, d), y = naive::zeros(L, d);
  for (size_t i = 0; i < L; ++i)
    for (size_t k = 0; k < d; ++k) {
      x[i][k] = 0.9 * std::cos(1.3 * double(i * d + k)) + 0.1;
      y[i][k] = 1.1 * std::sin(0.6 * double(i * d + k)) - 0.2;
    }
  for (GateType t : {GateType::None, GateType::Input, GateType::Output, GateType::Highway, GateType::Gru}) {
    INFO("type " << type_name(t));
    ParamStore p;
    GateWeights w;
    size_t salt = 1;
    auto mat = [&](const char* n, Mat& dst) {
      Tensor tt({int64_t(d), int64_t(d)});
      fill_pattern(tt, 0.8f, salt++);
      dst = tt.mat();
      p.emplace(std::string("g") + n, tt);
    };
    for (auto [n, dst] : {std::pair<const char*, Mat*>{".w_r", &w.w_r}, {".u_r", &w.u_r}, {".w_z", &w.w_z},
                          {".u_z", &w.u_z}, {".w_g", &w.w_g}, {".u_g", &w.u_g}})
      mat(n, *dst);
    Tensor b({int64_t(d)});
    for (size_t k = 0; k < d; ++k) b.data[k] = 0.5f + 0.5f * float(k);
    w.b_g = Eigen::Map<const Eigen::RowVectorXf>(b.data.data(), long(d));
    p.emplace("g.b_g", b);

    std::vector<GateActivation> acts;
    const Mat got = apply_gate(t, w, to_mat(x), to_mat(y), &acts);
    naive_gtrxl::Activations want_acts;
    const naive::Matrix want = naive_gtrxl::gate(t, p, "g", x, y, &want_acts);
    for (size_t i = 0; i < L; ++i)
      for (size_t k = 0; k < d; ++k) REQUIRE(got(long(i), long(k)) == Approx(want[i][k]).margin(1e-5));
    REQUIRE(acts.size() == want_acts.size());
    REQUIRE(gate_activation_names(t).size() == acts.size());
    for (size_t a = 0; a < acts.size(); ++a) {
      REQUIRE(acts[a].name == gate_activation_names(t)[a]);
      const naive::Matrix& wa = want_acts.at(acts[a].name);
      for (size_t i = 0; i < L; ++i)
        for (size_t k = 0; k < d; ++k) {
          REQUIRE(acts[a].value(long(i), long(k)) == Approx(wa[i][k]).margin(1e-6));
          REQUIRE(acts[a].value(long(i), long(k)) > 0.0f);
          REQUIRE(acts[a].value(long(i), long(k)) < 1.0f);
        }
    }
  }
}

TEST_CASE("gtrxl gates by hand: zero weights leave the bias-only limits", "[gtrxl]") {
  // W = U = 0: GRU r = 1/2, z = sigma(-b), h = tanh(0) = 0, so g = (1 - sigma(-b)) x = sigma(b) x;
  // output g = x + sigma(-b) y; highway g = sigma(b) x + sigma(-b) y; input g = x / 2 + y.
  Mat x(1, 2), y(1, 2);
  x << 2.0f, -1.0f;
  y << 0.5f, 3.0f;
  GateWeights w;
  w.w_r = w.u_r = w.w_z = w.u_z = w.w_g = w.u_g = Mat::Zero(2, 2);
  w.b_g = Eigen::RowVectorXf::Constant(2, 2.0f);
  const double s2 = 1.0 / (1.0 + std::exp(-2.0)), sm2 = 1.0 - s2;  // sigma(2), sigma(-2)
  std::vector<GateActivation> acts;
  Mat g = apply_gate(GateType::Gru, w, x, y, &acts);
  CHECK(g(0, 0) == Approx(2.0 * s2));
  CHECK(g(0, 1) == Approx(-1.0 * s2));
  REQUIRE(acts.size() == 2);
  CHECK(acts[0].value(0, 0) == Approx(0.5));   // r
  CHECK(acts[1].value(0, 1) == Approx(sm2));   // z
  g = apply_gate(GateType::Output, w, x, y, nullptr);
  CHECK(g(0, 0) == Approx(2.0 + sm2 * 0.5));
  g = apply_gate(GateType::Highway, w, x, y, nullptr);
  CHECK(g(0, 1) == Approx(-1.0 * s2 + 3.0 * sm2));
  g = apply_gate(GateType::Input, w, x, y, nullptr);
  CHECK(g(0, 0) == Approx(2.0 * 0.5 + 0.5));
  g = apply_gate(GateType::None, w, x, y, nullptr);
  CHECK(g(0, 1) == Approx(2.0));
}

TEST_CASE("gtrxl identity limit: zero gate weights pass the embedding stream through", "[gtrxl]") {
  // GRU with W = U = 0 (derived above): every sub-layer maps x to sigma(b_g) x whatever the
  // attention or FFN computed, so after layer l the hidden state is sigma(b_g)^(2(l+1)) times
  // the token embedding, in every segment; as b_g grows it is the embedding itself (the
  // identity map the paper initialises towards). Output and highway gates with W_g = 0 and a
  // large b_g reduce to the identity as well.
  struct Case { GateType type; float bias; };
  for (Case k : {Case{GateType::Gru, 2.0f}, Case{GateType::Gru, 0.0f}, Case{GateType::Gru, 30.0f},
                 Case{GateType::Output, 30.0f}, Case{GateType::Highway, 30.0f}}) {
    INFO("type " << type_name(k.type) << " b_g " << k.bias);
    ModelConfig c = gtrxl_config(k.type, true, NormPosition::Pre, 4, 4);
    c.gating()->bias_init = k.bias;
    ParamStore p = init_params(c, 3);
    for (auto& [name, t] : p)
      if (name.find("_gate.w_") != std::string::npos || name.find("_gate.u_") != std::string::npos)
        std::fill(t.data.begin(), t.data.end(), 0.0f);
    Model m(c, p);
    RunOptions o;
    o.trace.hidden = true;
    const RunResult r = m.forward(tokens(kGtrxlIds), {}, o);
    const double s = 1.0 / (1.0 + std::exp(-double(k.bias)));
    const Tensor& E = p.at("embed.tokens");
    for (int64_t seg = 0; seg < 2; ++seg)
      for (int64_t l = 0; l < 2; ++l) {
        const TracedArray* h = r.trace.find("decoder.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + ".hidden");
        REQUIRE(h);
        REQUIRE(h->tensor.shape == Shape{4, 8});
        const double factor = k.type == GateType::Gru ? std::pow(s, 2.0 * double(l + 1)) : 1.0;
        for (size_t i = 0; i < 4; ++i)
          for (size_t t = 0; t < 8; ++t) {
            const double e = E.data[size_t(kGtrxlIds[size_t(seg * 4) + i]) * 8 + t];
            REQUIRE(h->tensor.data[i * 8 + t] == Approx(factor * e).margin(1e-5));
          }
      }
  }
}

TEST_CASE("gtrxl output gate held open equals the ungated TrXL-I block", "[gtrxl]") {
  // Output gate x + sigma(W_g x - b_g) ReLU(y) with W_g = 0 and b_g = -40: sigma = 1, so the
  // block is TrXL-I, x + ReLU(y) (the naive oracle with type none).
  ModelConfig c = gtrxl_config(GateType::Output, true, NormPosition::Pre, 4, 4);
  ParamStore p = init_params(c, 9);
  for (auto& [name, t] : p) {
    if (name.find("_gate.w_g") != std::string::npos) std::fill(t.data.begin(), t.data.end(), 0.0f);
    if (name.find("_gate.b_g") != std::string::npos) std::fill(t.data.begin(), t.data.end(), -40.0f);
  }
  Model m(c, p);
  RunOptions o;
  const RunResult r = m.forward(tokens(kGtrxlIds), {}, o);
  ModelConfig ungated = c;
  ungated.gating()->type = GateType::None;
  const naive::Matrix want = naive_gtrxl::forward(ungated, p, kGtrxlIds).logits;
  REQUIRE(r.output.shape == Shape{8, 256});
  for (size_t i = 0; i < 8; ++i)
    for (size_t t = 0; t < 256; ++t) REQUIRE(r.output.data[i * 256 + t] == Approx(want[i][t]).margin(1e-4));
  // And the ReLU matters: without it (plain XL pre-norm) the result differs.
  ungated.gating()->identity_map_reorder = false;
  const naive::Matrix plain = naive_gtrxl::forward(ungated, p, kGtrxlIds).logits;
  double diff = 0;
  for (size_t i = 0; i < 8; ++i)
    for (size_t t = 0; t < 256; ++t) diff = std::max(diff, std::abs(plain[i][t] - want[i][t]));
  CHECK(diff > 1e-3);
}

TEST_CASE("gtrxl whole model matches a naive gated XL over segments with memory", "[gtrxl]") {
  struct Case { bool reorder; NormPosition np; int64_t mem; int64_t clamp; bool same; };
  const std::vector<Case> cases = {{true, NormPosition::Pre, 4, -1, false},
                                   {true, NormPosition::Pre, 2, 1, false},
                                   {false, NormPosition::Post, 4, -1, false},
                                   {false, NormPosition::Pre, 3, -1, true}};
  for (GateType t : {GateType::None, GateType::Input, GateType::Output, GateType::Highway, GateType::Gru})
    for (const Case& k : cases) {
      ModelConfig c = gtrxl_config(t, k.reorder, k.np, 4, k.mem);
      c.xl()->clamp_len = k.clamp;
      c.xl()->same_length = k.same;
      c.gating()->bias_init = 1.5f;
      ParamStore p = init_params(c, 21);
      // Non-zero attention/FFN biases and a per-unit b_g so every term is exercised.
      for (auto& [name, tt] : p)
        if (tt.shape.size() == 1 && name.find("norm") == std::string::npos)
          for (size_t i = 0; i < tt.data.size(); ++i) tt.data[i] += 0.1f * float(i % 5) - 0.2f;
      Model m(c, p);
      RunOptions o;
      const std::vector<int> ids = {3, 17, 5, 9, 30, 1, 12, 7, 40, 2};  // segments of 4, 4, 2
      const RunResult r = m.forward(tokens(ids), {}, o);
      const naive_gtrxl::Result want = naive_gtrxl::forward(c, p, ids);
      INFO("type " << type_name(t) << " reorder " << k.reorder << " mem " << k.mem << " clamp " << k.clamp
                   << " same " << k.same);
      REQUIRE(r.output.shape == Shape{10, 256});
      for (size_t i = 0; i < 10; ++i)
        for (size_t v = 0; v < 256; ++v) REQUIRE(r.output.data[i * 256 + v] == Approx(want.logits[i][v]).margin(1e-4));
      // Every gate activation the oracle computed is traced under its documented name.
      REQUIRE(want.gates.size() == 3 * 2 * 2 * gate_activation_names(t).size());
      for (const auto& [name, g] : want.gates) {
        const TracedArray* a = r.trace.find("decoder." + name);
        REQUIRE(a);
        REQUIRE(a->tensor.shape == Shape{int64_t(g.size()), 8});
        for (size_t i = 0; i < g.size(); ++i)
          for (size_t u = 0; u < 8; ++u) REQUIRE(a->tensor.data[i * 8 + u] == Approx(g[i][u]).margin(1e-5));
      }
    }
}

TEST_CASE("gtrxl parameters: per layer and sub-layer, b_g initialised to bias_init", "[gtrxl]") {
  ModelConfig c = gtrxl_config(GateType::Gru, true, NormPosition::Pre, 4, 4);
  c.gating()->bias_init = 2.0f;
  const ParamStore p = init_params(c, 1);
  for (const char* s : {"self_attn_gate", "ffn_gate"})
    for (int l = 0; l < 2; ++l) {
      const std::string pre = "decoder.layer" + std::to_string(l) + "." + s;
      for (const char* n : {".w_r", ".u_r", ".w_z", ".u_z", ".w_g", ".u_g"}) {
        REQUIRE(p.count(pre + n));
        CHECK(p.at(pre + n).shape == Shape{8, 8});
      }
      REQUIRE(p.count(pre + ".b_g"));
      CHECK(p.at(pre + ".b_g").shape == Shape{8});
      for (float v : p.at(pre + ".b_g").data) CHECK(v == 2.0f);
    }
  // 2 layers x 2 sub-layers x (6 d^2 + d) on top of the ungated model.
  ModelConfig plain = c;
  plain.xl()->gating.reset();
  CHECK(parameter_count(c) - parameter_count(plain) == 2 * 2 * (6 * 64 + 8));
  c.gating()->type = GateType::Input;
  const ParamStore pi = init_params(c, 1);
  CHECK(pi.count("decoder.layer1.ffn_gate.w_g"));
  CHECK(!pi.count("decoder.layer1.ffn_gate.b_g"));  // the input gate has no b_g
  c.gating()->type = GateType::None;
  CHECK(parameter_count(c) == parameter_count(plain));
}

TEST_CASE("gtrxl config: bad values rejected naming the key, round trip", "[gtrxl][config]") {
  auto rejects = [](const ModelConfig& c, const std::string& key) {
    try {
      validate_config(c, "t");
    } catch (const AtlasError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(key) != std::string::npos);
      return;
    }
    FAIL("accepted a bad " << key);
  };
  const ModelConfig c = gtrxl_config(GateType::Gru, true, NormPosition::Pre, 4, 4);
  REQUIRE_NOTHROW(validate_config(c, "t"));
  // Gates without Transformer-XL cannot be built in code (they are a field of XLConfig); the
  // parser's refusal of them is checked below.
  ModelConfig b = c;
  b.gating()->bias_init = -1.0f;
  rejects(b, "gating.bias_init");
  b = c;
  b.norm_position = NormPosition::Post;
  rejects(b, "gating.identity_map_reorder");
  b.gating()->identity_map_reorder = false;
  REQUIRE_NOTHROW(validate_config(b, "t"));

  const std::string json = config_to_json(c);
  const ModelConfig back = parse_config(json, "x.json");
  CHECK(back.gating());
  CHECK(back.gating()->type == GateType::Gru);
  CHECK(back.gating()->bias_init == 2.0f);
  CHECK(back.gating()->identity_map_reorder);
  auto parse_fails = [&](const std::string& from, const std::string& to, const std::string& key) {
    std::string j = json;
    const auto at = j.find(from);
    REQUIRE(at != std::string::npos);
    j.replace(at, from.size(), to);
    try {
      parse_config(j, "x.json");
      FAIL("parsed " << to);
    } catch (const AtlasError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  };
  parse_fails("\"type\": \"gru\"", "\"type\": \"sigmoid_tanh\"", "gating.type");
  parse_fails("\"bias_init\": 2.0", "\"bias_init\": -0.5", "gating.bias_init");
  parse_fails("\"bias_init\": 2.0", "\"bias_init\": \"two\"", "gating.bias_init");
  parse_fails("\"identity_map_reorder\"", "\"identity_map_reordering\"", "identity_map_reorder");
  // gating without xl through the parser.
  std::string j = json;
  const auto at = j.find("\"segment_length\"");
  REQUIRE(at != std::string::npos);
  const auto en = j.rfind("\"enabled\": true", at);
  REQUIRE(en != std::string::npos);
  j.replace(en, 15, "\"enabled\": false");
  try {
    parse_config(j, "x.json");
    FAIL("parsed gating without xl");
  } catch (const AtlasError& e) {
    CHECK(std::string(e.what()).find("gating.enabled") != std::string::npos);
  }
}

TEST_CASE("gtrxl presets parse; tiny-gtrxl traces every gate in (0, 1)", "[gtrxl][presets]") {
  const ModelConfig base = preset_config("gtrxl-base");
  CHECK(base.gating());
  CHECK(base.gating()->type == GateType::Gru);
  CHECK(base.gating()->bias_init == 2.0f);
  CHECK(base.gating()->identity_map_reorder);
  CHECK(base.norm_position == NormPosition::Pre);
  CHECK(base.n_layers == 12);
  CHECK(base.xl()->mem_len == 512);

  const ModelConfig c = preset_config("tiny-gtrxl");
  Model m(c, init_params(c, c.seed));
  RunOptions o;
  const RunResult r = m.run(std::string(40, 'a'), "", o);  // segments of 16, 16, 8
  CHECK(r.output.shape == Shape{40, 256});
  for (int seg = 0; seg < 3; ++seg)
    for (int l = 0; l < 2; ++l)
      for (const char* s : {"attn", "ffn"})
        for (const char* g : {"r", "z"}) {
          const std::string name = "decoder.seg" + std::to_string(seg) + ".layer" + std::to_string(l) + "." + s + ".gate." + g;
          const TracedArray* a = r.trace.find(name);
          INFO(name);
          REQUIRE(a);
          REQUIRE(a->tensor.shape == Shape{seg == 2 ? 8 : 16, 64});
          CHECK(a->meaning.find("GTrXL GRU") != std::string::npos);
          for (float v : a->tensor.data) {
            REQUIRE(v > 0.0f);
            REQUIRE(v < 1.0f);
          }
        }
  // At initialisation (b_g = 2, Glorot weights) the update gate sits around sigma(-2) = 0.119:
  // the block starts close to keeping x.
  const TracedArray* z = r.trace.find("decoder.seg0.layer0.attn.gate.z");
  double mean = 0;
  for (float v : z->tensor.data) mean += v;
  mean /= double(z->tensor.data.size());
  CHECK(mean > 0.05);
  CHECK(mean < 0.25);
  CHECK(!r.trace.find("decoder.seg0.layer0.attn.gate.input"));
}

TEST_CASE("gtrxl cost estimate counts the gate maps; atlas info names the gates", "[gtrxl]") {
  ModelConfig c = gtrxl_config(GateType::Gru, true, NormPosition::Pre, 4, 4);
  ModelConfig plain = c;
  plain.xl()->gating.reset();
  // 2 layers x 2 sub-layers x 6 maps x 2 L d^2 FLOPs at L = 10, d = 8.
  CHECK(estimate_cost(c, 10).flops - estimate_cost(plain, 10).flops == Approx(2 * 2 * 6 * 2 * 10 * 64));
  c.gating()->type = GateType::Highway;
  CHECK(estimate_cost(c, 10).flops - estimate_cost(plain, 10).flops == Approx(2 * 2 * 1 * 2 * 10 * 64));
  CHECK(describe_architecture(c).find("GTrXL gates: highway, b_g init 2, identity-map reordering") != std::string::npos);
  CHECK(describe_architecture(plain).find("GTrXL") == std::string::npos);
}
