// RunOptions::hooks.residual and .norm (core/model/activation_hooks.h). Oracles: the residual
// identities recomputed from what the other hooks see (pre-norm: resid_mid = input + attention,
// output = resid_mid + feed-forward, bit for bit; post-norm: the same sums before the norms, and
// the layer's output = the feed-forward norm's output); each norm's output against a naive
// LayerNorm / RMSNorm / ScaleNorm of its input written with loops in double; replacing a norm's
// output with that naive norm leaves the logits where they were; zeroing the final norm's output
// leaves the output bias.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/formats/packed_weights.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

Model norm_hook_model(const char* preset, uint64_t seed) {
  const ModelConfig c = preset_test::small_preset_config(preset);
  return Model(c, init_params(c, seed));
}

Tensor norm_hook_logits(const Model& m, const std::vector<TokenInfo>& tokens, RunOptions o = {}) {
  o.trace = TraceOptions::none();
  return m.forward(tokens, {}, o).output;
}

// A parameter's values; an empty tensor when the model has none of that name.
Tensor param_values(const Model& m, const std::string& name) {
  const auto it = m.params().find(name);
  return it == m.params().end() ? Tensor{} : to_float(it->second);
}

// The config's norm of each row of x [L, d], naively in double (LayerNorm: biased variance,
// eps inside the root; RMSNorm: mean square; ScaleNorm: g x / max(|x|, eps)).
Tensor naive_norm(const Model& m, const std::string& prefix, const Tensor& x) {
  const ModelConfig& c = m.config();
  const int64_t L = x.shape.at(0), d = x.shape.at(1);
  const Tensor gamma = param_values(m, prefix + ".gamma"), beta = param_values(m, prefix + ".beta"),
               g = param_values(m, prefix + ".g");
  Tensor y = x;
  for (int64_t i = 0; i < L; ++i) {
    const float* r = &x.data[size_t(i * d)];
    double mean = 0, sq = 0;
    for (int64_t k = 0; k < d; ++k) mean += r[k];
    mean /= double(d);
    for (int64_t k = 0; k < d; ++k) sq += c.norm == NormKind::LayerNorm ? (r[k] - mean) * (r[k] - mean) : double(r[k]) * r[k];
    for (int64_t k = 0; k < d; ++k) {
      double v;
      if (c.norm == NormKind::LayerNorm)
        v = (r[k] - mean) / std::sqrt(sq / double(d) + c.norm_eps) * gamma.data[size_t(k)] + beta.data[size_t(k)];
      else if (c.norm == NormKind::RmsNorm)
        v = r[k] / std::sqrt(sq / double(d) + c.norm_eps) * gamma.data[size_t(k)];
      else
        v = g.data[0] * r[k] / std::max(std::sqrt(sq), double(c.norm_eps));
      y.data[size_t(i * d + k)] = float(v);
    }
  }
  return y;
}

void require_close(const Tensor& a, const Tensor& b, float tol) {
  REQUIRE(a.shape == b.shape);
  for (size_t i = 0; i < a.data.size(); ++i) REQUIRE(std::abs(a.data[i] - b.data[i]) <= tol * (1 + std::abs(b.data[i])));
}

Tensor elementwise_sum(const Tensor& a, const Tensor& b) {
  Tensor s = a;
  for (size_t i = 0; i < s.data.size(); ++i) s.data[i] = a.data[i] + b.data[i];
  return s;
}

// Everything the layer, sub-layer, residual and norm hooks saw in one run.
struct SeenActivations {
  std::map<std::string, Tensor> in, out, sublayer, residual, norm_in, norm_out;
  std::vector<std::string> norm_order;
  RunOptions options() {
    RunOptions o;
    o.hooks.layer = [this](const std::string& l, const Tensor& x, Tensor& y) { in[l] = x, out[l] = y; };
    o.hooks.sublayer_output = [this](const std::string& p, Tensor& t) { sublayer[p] = t; };
    o.hooks.residual = [this](const std::string& p, Tensor& t) { residual[p] = t; };
    o.hooks.norm = [this](const std::string& n, const Tensor& x, Tensor& y) {
      norm_in[n] = x, norm_out[n] = y;
      norm_order.push_back(n);
    };
    return o;
  }
};

}  // namespace

TEST_CASE("pre-norm: resid_mid = input + attention, output = resid_mid + feed-forward, norms of their inputs",
          "[hooks][norm]") {
  for (const char* preset : {"tiny-decoder", "tiny-llama", "tiny-scalenorm"}) {
    CAPTURE(preset);
    const Model m = norm_hook_model(preset, 4);
    REQUIRE(m.config().norm_position == NormPosition::Pre);
    const auto tokens = m.tokenize("abcab cabca", "").first;
    SeenActivations seen;
    const Tensor plain = norm_hook_logits(m, tokens);
    CHECK(norm_hook_logits(m, tokens, seen.options()).data == plain.data);  // reading changes nothing
    const int64_t layers = m.config().n_layers;
    REQUIRE(seen.out.size() == size_t(layers));
    for (int64_t l = 0; l < layers; ++l) {
      const std::string p = "decoder.layer" + std::to_string(l);
      const Tensor mid = elementwise_sum(seen.in.at(p), seen.sublayer.at(p + ".self_attn"));
      CHECK(seen.residual.at(p + ".self_attn").data == mid.data);
      CHECK(seen.residual.at(p + ".ffn").data == elementwise_sum(mid, seen.sublayer.at(p + ".ffn")).data);
      CHECK(seen.out.at(p).data == seen.residual.at(p + ".ffn").data);
      CHECK(seen.norm_in.at(p + ".self_attn_norm").data == seen.in.at(p).data);
      CHECK(seen.norm_in.at(p + ".ffn_norm").data == mid.data);
      for (const char* n : {".self_attn_norm", ".ffn_norm"})
        require_close(seen.norm_out.at(p + n), naive_norm(m, p + n, seen.norm_in.at(p + n)), 1e-5f);
    }
    const std::string last = "decoder.layer" + std::to_string(layers - 1);
    CHECK(seen.norm_in.at("decoder.final_norm").data == seen.out.at(last).data);
    require_close(seen.norm_out.at("decoder.final_norm"), naive_norm(m, "decoder.final_norm", seen.out.at(last)), 1e-5f);
    CHECK(seen.norm_order.back() == "decoder.final_norm");
    CHECK(seen.norm_order.size() == size_t(2 * layers + 1));
  }
}

TEST_CASE("replacing a norm's output with the naive norm of resid_mid leaves the logits; zeroing the final norm "
          "leaves the output bias",
          "[hooks][norm]") {
  const Model m = norm_hook_model("tiny-decoder", 6);
  const auto tokens = m.tokenize("The fox runs far", "").first;
  const Tensor plain = norm_hook_logits(m, tokens);
  Tensor mid;
  RunOptions replace;
  replace.hooks.residual = [&](const std::string& p, Tensor& t) {
    if (p == "decoder.layer1.self_attn") mid = t;
  };
  replace.hooks.norm = [&](const std::string& n, const Tensor&, Tensor& y) {
    if (n == "decoder.layer1.ffn_norm") y = naive_norm(m, n, mid);
  };
  require_close(norm_hook_logits(m, tokens, replace), plain, 1e-4f);
  // The oracle is not vacuous: a norm's output replaced by its input moves the logits.
  RunOptions identity;
  identity.hooks.norm = [&](const std::string& n, const Tensor& x, Tensor& y) {
    if (n == "decoder.layer1.ffn_norm") y = x;
  };
  CHECK(norm_hook_logits(m, tokens, identity).data != plain.data);

  RunOptions zero;
  zero.hooks.norm = [](const std::string& n, const Tensor&, Tensor& y) {
    if (n == "decoder.final_norm") std::fill(y.data.begin(), y.data.end(), 0.0f);
  };
  const Tensor zeroed = norm_hook_logits(m, tokens, zero);
  const auto bias = m.params().find("output.bias");
  const int64_t V = zeroed.shape.at(1);
  for (int64_t i = 0; i < zeroed.shape.at(0); ++i)
    for (int64_t v = 0; v < V; ++v)
      REQUIRE(zeroed.data[size_t(i * V + v)] == (bias == m.params().end() ? 0.0f : to_float(bias->second).data[size_t(v)]));
}

TEST_CASE("post-norm: the residual hooks see the sums before the norms, the layer's output is the feed-forward "
          "norm's",
          "[hooks][norm]") {
  const Model m = norm_hook_model("tiny-encoder", 7);
  REQUIRE(m.config().norm_position == NormPosition::Post);
  const auto tokens = m.tokenize("abcab cabca", "").first;
  SeenActivations seen;
  const Tensor plain = norm_hook_logits(m, tokens);
  CHECK(norm_hook_logits(m, tokens, seen.options()).data == plain.data);
  for (int64_t l = 0; l < m.config().n_layers; ++l) {
    const std::string p = "encoder.layer" + std::to_string(l);
    const Tensor sum = elementwise_sum(seen.in.at(p), seen.sublayer.at(p + ".attn"));
    CHECK(seen.residual.at(p + ".attn").data == sum.data);
    CHECK(seen.norm_in.at(p + ".attn_norm").data == sum.data);
    require_close(seen.norm_out.at(p + ".attn_norm"), naive_norm(m, p + ".attn_norm", sum), 1e-5f);
    const Tensor& mid = seen.norm_out.at(p + ".attn_norm");  // the stream the feed-forward reads
    CHECK(seen.residual.at(p + ".ffn").data == elementwise_sum(mid, seen.sublayer.at(p + ".ffn")).data);
    CHECK(seen.norm_in.at(p + ".ffn_norm").data == seen.residual.at(p + ".ffn").data);
    CHECK(seen.out.at(p).data == seen.norm_out.at(p + ".ffn_norm").data);
  }
  CHECK(seen.norm_out.count("encoder.final_norm") == 0);  // a post-norm stack has none
  CHECK(seen.norm_order.size() == size_t(2 * m.config().n_layers));

  // Replacing the attention norm's output with the naive norm of the sum leaves the logits.
  RunOptions replace;
  Tensor sum0;
  replace.hooks.residual = [&](const std::string& p, Tensor& t) {
    if (p == "encoder.layer0.attn") sum0 = t;
  };
  replace.hooks.norm = [&](const std::string& n, const Tensor&, Tensor& y) {
    if (n == "encoder.layer0.attn_norm") y = naive_norm(m, n, sum0);
  };
  require_close(norm_hook_logits(m, tokens, replace), plain, 1e-4f);
}

TEST_CASE("an encoder-decoder model hooks every sub-layer's sum and norm, cross-attention's too", "[hooks][norm]") {
  const Model ed = norm_hook_model("tiny-encoder-decoder", 2);
  std::vector<std::string> residuals, norms;
  RunOptions o;
  o.trace = TraceOptions::none();
  o.hooks.residual = [&](const std::string& p, Tensor&) { residuals.push_back(p); };
  o.hooks.norm = [&](const std::string& n, const Tensor&, Tensor&) { norms.push_back(n); };
  ed.run("abc", "xyz", o);
  CHECK(std::count(residuals.begin(), residuals.end(), "decoder.layer0.cross_attn") == 1);
  CHECK(std::count(residuals.begin(), residuals.end(), "encoder.layer1.ffn") == 1);
  CHECK(std::count(norms.begin(), norms.end(), "decoder.layer1.cross_attn_norm") == 1);
  CHECK(std::count(norms.begin(), norms.end(), "encoder.layer0.attn_norm") == 1);
}

TEST_CASE("Transformer-XL, Universal Transformer and reversible stacks call the feed-forward and stack-input hooks",
          "[hooks][norm][stacks]") {
  // Oracles as in test_sublayer_hooks.cpp: zeroing the feed-forward's output equals the model
  // with its W2 and b2 zeroed; another text's stack inputs (one per XL segment, replayed in order)
  // give that text's run.
  const std::vector<std::pair<const char*, const char*>> cases = {{"tiny-xl", "decoder.layer1.ffn"},
                                                                  {"tiny-gtrxl", "decoder.layer0.ffn"},
                                                                  {"tiny-ut-fixed", "encoder.universal.ffn"},
                                                                  {"tiny-ut-act", "decoder.universal.ffn"},
                                                                  {"tiny-reformer", "decoder.layer1.ffn"}};
  for (const auto& [preset, ffn] : cases) {
    CAPTURE(preset);
    const Model m = norm_hook_model(preset, 8);
    const std::string text = "the quick brown fox jumps over the lazy dog, twice over";  // > one XL segment
    std::string other = text;
    std::reverse(other.begin(), other.end());
    const auto a = m.tokenize(text, "").first, b = m.tokenize(other, "").first;
    REQUIRE(a.size() == b.size());
    const Tensor plain = norm_hook_logits(m, a);

    RunOptions zero;
    int calls = 0;
    zero.hooks.sublayer_output = [&, ffn = std::string(ffn)](const std::string& p, Tensor& t) {
      if (p != ffn) return;
      ++calls;
      std::fill(t.data.begin(), t.data.end(), 0.0f);
    };
    const Tensor zeroed = norm_hook_logits(m, a, zero);
    CHECK(calls > 0);
    ParamStore p = m.params();
    for (const std::string w : {".w2", ".b2"})
      if (auto it = p.find(ffn + w); it != p.end()) {
        Tensor t = to_float(it->second);
        std::fill(t.data.begin(), t.data.end(), 0.0f);
        it->second = t;
      }
    CHECK(zeroed.data == norm_hook_logits(Model(m.config(), std::move(p)), a).data);
    CHECK(zeroed.data != plain.data);

    std::vector<Tensor> b_inputs;
    RunOptions read;
    read.hooks.stack_input = [&](const std::string&, Tensor& x) { b_inputs.push_back(x); };
    const Tensor b_logits = norm_hook_logits(m, b, read);
    REQUIRE(!b_inputs.empty());
    size_t next = 0;
    RunOptions replace;
    replace.hooks.stack_input = [&](const std::string&, Tensor& x) { x = b_inputs.at(next++); };
    CHECK(norm_hook_logits(m, a, replace).data == b_logits.data);
    CHECK(next == b_inputs.size());
  }
}

TEST_CASE("the Universal Transformer hooks its shared layer's sums and norms at every step; reversible layers "
          "their norms",
          "[hooks][norm][stacks]") {
  const Model ut = norm_hook_model("tiny-ut-fixed", 3);  // post-norm encoder, 4 fixed steps
  const auto tokens = ut.tokenize("abcab cabca", "").first;
  std::map<std::string, int> residuals, norms;
  std::vector<Tensor> attn_sums, attn_norm_inputs;
  RunOptions o;
  o.hooks.residual = [&](const std::string& p, Tensor& x) {
    ++residuals[p];
    if (p == "encoder.universal.attn") attn_sums.push_back(x);
  };
  o.hooks.norm = [&](const std::string& n, const Tensor& x, Tensor&) {
    ++norms[n];
    if (n == "encoder.universal.attn_norm") attn_norm_inputs.push_back(x);
  };
  CHECK(norm_hook_logits(ut, tokens, o).data == norm_hook_logits(ut, tokens).data);
  CHECK(residuals == std::map<std::string, int>{{"encoder.universal.attn", 4}, {"encoder.universal.ffn", 4}});
  CHECK(norms == std::map<std::string, int>{{"encoder.universal.attn_norm", 4}, {"encoder.universal.ffn_norm", 4}});
  REQUIRE(attn_sums.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(attn_norm_inputs[i].data == attn_sums[i].data);  // post-norm: the sum

  const Model rev = norm_hook_model("tiny-reformer", 3);
  const auto rt = rev.tokenize("abcab cabca", "").first;
  std::map<std::string, Tensor> in, out;
  RunOptions ro;
  ro.hooks.norm = [&](const std::string& n, const Tensor& x, Tensor& y) { in[n] = x, out[n] = y; };
  norm_hook_logits(rev, rt, ro);
  for (const char* n : {"decoder.layer0.self_attn_norm", "decoder.layer1.ffn_norm", "decoder.final_norm"}) {
    CAPTURE(n);
    require_close(out.at(n), naive_norm(rev, n, in.at(n)), 1e-5f);
  }
}
