// RunOptions::hooks.sublayer_output and .stack_input (core/model/activation_hooks.h). Oracles:
// the pre-norm residual identity output = (input + attention) + feed-forward, recomputed from
// what the layer hook sees; and models edited by hand: zeroing a sub-layer's output equals the
// model with that sub-layer's output projection and bias set to zero, and replacing the stack's
// input with another text's equals the run of that text.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "core/formats/packed_weights.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

Model hook_test_model(const char* preset, uint64_t seed) {
  const ModelConfig c = preset_test::small_preset_config(preset);
  return Model(c, init_params(c, seed));
}

Tensor logits_of(const Model& m, const std::vector<TokenInfo>& tokens, RunOptions o = {}) {
  o.trace = TraceOptions::none();
  return m.forward(tokens, {}, o).output;
}

// The model with the named parameters set to zero.
Model with_zeroed(const Model& m, const std::vector<std::string>& names) {
  ParamStore p = m.params();
  for (const std::string& n : names) {
    auto it = p.find(n);
    if (it == p.end()) continue;  // an optional bias the preset does not have
    Tensor t = to_float(it->second);
    std::fill(t.data.begin(), t.data.end(), 0.0f);
    it->second = t;
  }
  return Model(m.config(), std::move(p));
}

}  // namespace

TEST_CASE("sub-layer hooks see what the residual adds: output = (input + attention) + feed-forward",
          "[hooks][sublayer]") {
  for (const char* preset : {"tiny-decoder", "tiny-llama"}) {
    CAPTURE(preset);
    const Model m = hook_test_model(preset, 3);
    const auto tokens = m.tokenize("abcab cabca", "").first;
    std::map<std::string, Tensor> seen, in, out;
    Tensor stack;
    RunOptions o;
    o.hooks.sublayer_output = [&](const std::string& prefix, Tensor& t) { seen[prefix] = t; };
    o.hooks.layer = [&](const std::string& layer, const Tensor& x, Tensor& y) { in[layer] = x, out[layer] = y; };
    o.hooks.stack_input = [&](const std::string& s, Tensor& x) {
      CHECK(s == "decoder");
      stack = x;
    };
    const Tensor plain = logits_of(m, tokens);
    CHECK(logits_of(m, tokens, o).data == plain.data);  // reading changes nothing
    REQUIRE(out.size() == size_t(m.config().n_layers));
    CHECK(stack.data == in.at("decoder.layer0").data);
    for (int64_t l = 0; l < m.config().n_layers; ++l) {
      const std::string p = "decoder.layer" + std::to_string(l);
      const Tensor& a = seen.at(p + ".self_attn");
      const Tensor& f = seen.at(p + ".ffn");
      REQUIRE(a.shape == in.at(p).shape);
      for (size_t i = 0; i < a.data.size(); ++i) {
        const float mid = in.at(p).data[i] + a.data[i];
        REQUIRE(out.at(p).data[i] == mid + f.data[i]);
      }
    }
  }
}

TEST_CASE("zeroing a sub-layer's output through the hook equals the model with its projection zeroed",
          "[hooks][sublayer]") {
  const Model m = hook_test_model("tiny-llama", 5);
  const auto tokens = m.tokenize("The fox runs far", "").first;
  auto zeroing = [](const std::string& target) {
    RunOptions o;
    o.hooks.sublayer_output = [target](const std::string& prefix, Tensor& t) {
      if (prefix == target) std::fill(t.data.begin(), t.data.end(), 0.0f);
    };
    return o;
  };
  const Tensor attn = logits_of(m, tokens, zeroing("decoder.layer1.self_attn"));
  CHECK(attn.data == logits_of(with_zeroed(m, {"decoder.layer1.self_attn.wo", "decoder.layer1.self_attn.bo"}), tokens).data);
  const Tensor ffn = logits_of(m, tokens, zeroing("decoder.layer0.ffn"));
  CHECK(ffn.data == logits_of(with_zeroed(m, {"decoder.layer0.ffn.w2", "decoder.layer0.ffn.b2"}), tokens).data);
  CHECK(ffn.data != logits_of(m, tokens).data);
}

TEST_CASE("replacing a stack's input with another text's equals the run of that text", "[hooks][sublayer]") {
  const Model m = hook_test_model("tiny-decoder", 9);
  const auto a = m.tokenize("abcabcab", "").first, b = m.tokenize("xbcabzab", "").first;
  REQUIRE(a.size() == b.size());
  Tensor b_input;
  RunOptions read;
  read.hooks.stack_input = [&](const std::string&, Tensor& x) { b_input = x; };
  const Tensor b_logits = logits_of(m, b, read);
  RunOptions replace;
  replace.hooks.stack_input = [&](const std::string&, Tensor& x) { x = b_input; };
  CHECK(logits_of(m, a, replace).data == b_logits.data);
  // An encoder-decoder model calls it once per stack.
  const Model ed = hook_test_model("tiny-encoder-decoder", 2);
  std::vector<std::string> stacks, prefixes;
  RunOptions o;
  o.trace = TraceOptions::none();
  o.hooks.stack_input = [&](const std::string& s, Tensor&) { stacks.push_back(s); };
  o.hooks.sublayer_output = [&](const std::string& p, Tensor&) { prefixes.push_back(p); };
  ed.run("abc", "xyz", o);
  CHECK(stacks == std::vector<std::string>{"encoder", "decoder"});
  CHECK(std::count(prefixes.begin(), prefixes.end(), "decoder.layer0.cross_attn") == 1);
  CHECK(std::count(prefixes.begin(), prefixes.end(), "encoder.layer1.ffn") == 1);
}
