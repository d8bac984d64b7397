// The logit lens requested through RunOptions (TraceOptions::logit_lens) instead of a post-run
// call: checked against the naive final norm + output head applied by hand to the traced
// hidden states, and for the hidden arrays being kept only when asked for.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"
#include "core/model/model.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

ModelConfig lens_option_config(NormPosition np) {
  ModelConfig c;
  c.name = "lens-option-test";
  c.architecture = Architecture::Decoder;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 3;
  c.vocab_size = 256;
  c.max_positions = 128;
  c.norm_position = np;
  c.scale_embedding = false;
  c.init_std = 0.5f;
  return c;
}

bool has_hidden(const Trace& t) {
  for (const auto& a : t.arrays)
    if (a.name.size() > 7 && a.name.compare(a.name.size() - 7, 7, ".hidden") == 0) return true;
  return false;
}

const std::vector<int> kLensIds = {3, 14, 15, 9, 26, 5};

}  // namespace

TEST_CASE("TraceOptions::logit_lens adds per-layer predictions matching a naive lens", "[logit_lens]") {
  for (NormPosition np : {NormPosition::Pre, NormPosition::Post}) {
    const ModelConfig c = lens_option_config(np);
    Model m(c, init_params(c, 8));
    RunOptions o;
    o.trace.hidden = true;
    o.trace.logit_lens = 2;
    const RunResult r = m.forward(tokens(kLensIds), {}, o);
    const TracedArray* ids = r.trace.find("decoder.logit_lens.ids");
    const TracedArray* probs = r.trace.find("decoder.logit_lens.probs");
    REQUIRE(ids);
    REQUIRE(probs);
    REQUIRE(ids->tensor.shape == Shape{3, 6, 2});
    CHECK(ids->dtype == DType::I32);
    const size_t d = 16, V = 256;
    for (size_t l = 0; l < 3; ++l) {
      const Tensor& h = r.trace.find("decoder.layer" + std::to_string(l) + ".hidden")->tensor;
      naive::Matrix x(6, std::vector<double>(d));
      for (size_t i = 0; i < 6; ++i)
        for (size_t k = 0; k < d; ++k) x[i][k] = h.data[i * d + k];
      if (np == NormPosition::Pre) x = naive::norm(x, c, m.params(), "decoder.final_norm");
      const naive::Matrix logits = naive::linear(x, m.params().at("embed.tokens"), nullptr);
      for (size_t i = 0; i < 6; ++i) {
        // Top-2 of the softmax by hand.
        std::vector<size_t> order(V);
        for (size_t v = 0; v < V; ++v) order[v] = v;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[i][a] > logits[i][b]; });
        const double mx = logits[i][order[0]];
        double z = 0;
        for (size_t v = 0; v < V; ++v) z += std::exp(logits[i][v] - mx);
        for (size_t k = 0; k < 2; ++k) {
          CHECK(ids->tensor.data[(l * 6 + i) * 2 + k] == float(order[k]));
          CHECK(probs->tensor.data[(l * 6 + i) * 2 + k] == Approx(std::exp(logits[i][order[k]] - mx) / z).margin(1e-5));
        }
      }
    }
  }
}

TEST_CASE("TraceOptions::logit_lens keeps hidden states only when they were asked for", "[logit_lens]") {
  const ModelConfig c = lens_option_config(NormPosition::Pre);
  Model m(c, init_params(c, 8));
  RunOptions with_hidden;
  with_hidden.trace.hidden = true;
  with_hidden.trace.logit_lens = 3;
  const RunResult a = m.forward(tokens(kLensIds), {}, with_hidden);
  RunOptions lens_only;
  lens_only.trace.logit_lens = 3;
  const RunResult b = m.forward(tokens(kLensIds), {}, lens_only);
  CHECK(has_hidden(a.trace));
  CHECK_FALSE(has_hidden(b.trace));
  const TracedArray* pa = a.trace.find("decoder.logit_lens.probs");
  const TracedArray* pb = b.trace.find("decoder.logit_lens.probs");
  REQUIRE(pa);
  REQUIRE(pb);
  CHECK(pa->tensor.data == pb->tensor.data);
  RunOptions plain;
  const RunResult p = m.forward(tokens(kLensIds), {}, plain);  // default: no lens
  CHECK_FALSE(p.trace.find("decoder.logit_lens.ids"));
  CHECK(TraceOptions::none().logit_lens == 0);
  CHECK(TraceOptions::all().logit_lens == 0);
}

TEST_CASE("TraceOptions::logit_lens errors name the problem", "[logit_lens]") {
  ModelConfig c = lens_option_config(NormPosition::Pre);
  c.output = OutputHead::None;
  Model m(c, init_params(c, 8));
  RunOptions o;
  o.trace.logit_lens = 2;
  CHECK_THROWS_WITH(m.forward(tokens(kLensIds), {}, o), Catch::Contains("output head"));
  const ModelConfig t = lens_option_config(NormPosition::Pre);
  Model mt(t, init_params(t, 8));
  o.trace.logit_lens = 257;
  CHECK_THROWS_WITH(mt.forward(tokens(kLensIds), {}, o), Catch::Contains("top-k"));
}
