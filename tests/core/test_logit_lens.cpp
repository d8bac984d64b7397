// Logit lens (core/analysis/logit_lens.cpp): intermediate layers against the naive oracle's norm and
// output head applied to the traced hidden state; the last layer against the model's logits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/tensor/error.h"
#include "core/analysis/logit_lens.h"
#include "core/model/model.h"
#include "tests/core/naive_transformer.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::tokens;

namespace {

ModelConfig lens_config(NormPosition np, NormKind nk) {
  ModelConfig c;
  c.name = "lens-test";
  c.architecture = Architecture::Decoder;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 3;
  c.vocab_size = 256;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.max_positions = 128;
  c.norm_position = np;
  c.norm = nk;
  c.scale_embedding = false;
  c.init_std = 0.5f;
  return c;
}

// Top-k of softmax(row) by hand: (id, prob), highest first.
std::vector<std::pair<int, double>> top_k(const std::vector<double>& row, int k) {
  double mx = *std::max_element(row.begin(), row.end()), z = 0;
  for (double v : row) z += std::exp(v - mx);
  std::vector<std::pair<int, double>> all;
  for (size_t v = 0; v < row.size(); ++v) all.push_back({int(v), std::exp(row[v] - mx) / z});
  std::stable_sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.second > b.second; });
  all.resize(size_t(k));
  return all;
}

void check_lens(const ModelConfig& c) {
  Model m(c, init_params(c, 8));
  RunOptions o;
  o.trace.hidden = true;
  const std::vector<int> ids = {3, 14, 15, 9, 26, 5};
  RunResult r = m.forward(tokens(ids), {}, o);
  add_logit_lens(m, r, 3);
  const Tensor& lid = r.trace.find("decoder.logit_lens.ids")->tensor;
  const Tensor& lp = r.trace.find("decoder.logit_lens.probs")->tensor;
  REQUIRE(lid.shape == Shape{3, 6, 3});
  const size_t d = size_t(c.d_model), V = size_t(c.vocab_size);
  for (int64_t l = 0; l < 3; ++l) {
    const Tensor& h = r.trace.find("decoder.layer" + std::to_string(l) + ".hidden")->tensor;
    naive::Matrix x(6, std::vector<double>(d));
    for (size_t i = 0; i < 6; ++i)
      for (size_t k = 0; k < d; ++k) x[i][k] = h.data[i * d + k];
    if (c.norm_position == NormPosition::Pre) x = naive::norm(x, c, m.params(), "decoder.final_norm");
    naive::Matrix logits = naive::linear(x, m.params().at("embed.tokens"), nullptr);
    for (size_t i = 0; i < 6; ++i) {
      auto want = top_k(logits[i], 3);
      for (size_t r2 = 0; r2 < 3; ++r2) {
        CHECK(lid.data[(size_t(l) * 6 + i) * 3 + r2] == float(want[r2].first));
        CHECK(lp.data[(size_t(l) * 6 + i) * 3 + r2] == Approx(want[r2].second).margin(1e-5));
      }
    }
  }
  // The last layer is the model's own prediction.
  for (size_t i = 0; i < 6; ++i) {
    std::vector<double> row(V);
    for (size_t v = 0; v < V; ++v) row[v] = r.output.data[i * V + v];
    CHECK(lid.data[(2 * 6 + i) * 3] == float(top_k(row, 1)[0].first));
  }
}

}  // namespace

TEST_CASE("logit lens matches the naive norm + output head per layer", "[logit_lens]") {
  check_lens(lens_config(NormPosition::Pre, NormKind::LayerNorm));
  check_lens(lens_config(NormPosition::Post, NormKind::LayerNorm));
  check_lens(lens_config(NormPosition::Pre, NormKind::ScaleNorm));
}

TEST_CASE("logit lens needs an output head, traced hidden states and a valid k", "[logit_lens]") {
  ModelConfig c = lens_config(NormPosition::Pre, NormKind::LayerNorm);
  Model m(c, init_params(c, 1));
  RunResult plain = m.forward(tokens({1, 2}), {}, RunOptions{});
  CHECK_THROWS_WITH(add_logit_lens(m, plain, 2), Catch::Contains("hidden"));
  RunOptions o;
  o.trace.hidden = true;
  RunResult r = m.forward(tokens({1, 2}), {}, o);
  CHECK_THROWS_WITH(add_logit_lens(m, r, 257), Catch::Contains("top-k"));
  c.output = OutputHead::None;
  Model n(c, init_params(c, 1));
  RunResult rn = n.forward(tokens({1, 2}), {}, o);
  CHECK_THROWS_WITH(add_logit_lens(n, rn, 2), Catch::Contains("output head"));
}

TEST_CASE("logit lens of a Universal Transformer reads every step's state", "[logit_lens]") {
  ModelConfig c = lens_config(NormPosition::Post, NormKind::LayerNorm);
  c.stack = UniversalConfig{};
  c.universal()->act = false;
  c.universal()->max_steps = 4;
  Model m(c, init_params(c, 2));
  RunOptions o;
  o.trace.hidden = true;
  RunResult r = m.forward(tokens({7, 8, 9}), {}, o);
  add_logit_lens(m, r, 1);
  const Tensor& ids = r.trace.find("decoder.logit_lens.ids")->tensor;
  REQUIRE(ids.shape == Shape{4, 3, 1});
  // Post-norm fixed steps: the last step's state is the output, so its top-1 is the model's.
  const size_t V = size_t(c.vocab_size);
  for (size_t i = 0; i < 3; ++i) {
    size_t best = 0;
    for (size_t v = 1; v < V; ++v)
      if (r.output.data[i * V + v] > r.output.data[i * V + best]) best = v;
    CHECK(ids.data[3 * 3 + i] == float(best));
  }
}
