// Ablation sweeps (core/analysis/ablation_sweep.h) against independent routes to the same
// numbers: every zeroed-head cell equals the per-spec DropHead ablation (W^O columns zeroed,
// ablation.h) for the standard stacks, an encoder-decoder, Transformer-XL and a Universal
// Transformer; every zeroed-layer cell equals LayerDrop pruning of that layer; a mean-ablated
// head equals a model whose W^O columns are zeroed and whose output bias carries W^O times the
// head's mean output, computed here with naive loops from the traced attention; the loss and
// logit-difference metrics are recomputed by hand from the ablated model's logits.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/ablation.h"
#include "core/analysis/ablation_sweep.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/naive_layer_input.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// The per-spec route: the existing ablation's per-position values averaged.
double per_spec(const Model& model, const std::vector<TokenInfo>& src, const std::vector<TokenInfo>& tgt,
                const AblationSpec& spec) {
  RunResult full = model.forward(src, tgt, RunOptions{});
  return mean_of(compare_ablation(model, full, spec, RunOptions{}));
}

std::vector<double> log_softmax_row(const Tensor& logits, int64_t i) {
  const int64_t V = logits.shape[1];
  double mx = -1e300, z = 0;
  for (int64_t v = 0; v < V; ++v) mx = std::max(mx, double(logits.data[size_t(i * V + v)]));
  for (int64_t v = 0; v < V; ++v) z += std::exp(double(logits.data[size_t(i * V + v)]) - mx);
  std::vector<double> out(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) out[size_t(v)] = double(logits.data[size_t(i * V + v)]) - mx - std::log(z);
  return out;
}

}  // namespace

TEST_CASE("a zeroed head of the sweep equals the per-spec DropHead ablation, every cell", "[ablation][sweep]") {
  for (const std::string preset : {"tiny-decoder", "tiny-encoder-decoder", "tiny-xl", "tiny-ut-act", "tiny-llama", "tiny-gemma"}) {
    CAPTURE(preset);
    const ModelConfig c = preset_test::small_preset_config(preset);
    const Model model(c, init_params(c, 11));
    const auto [src, tgt] = model.tokenize("abcab cab", c.architecture == Architecture::EncoderDecoder ? "cabba" : "");
    SweepSpec spec;  // zero, heads, KL
    const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
    REQUIRE(r.layers == ablation_layer_count(c));
    REQUIRE(r.heads == c.n_heads);
    CHECK(r.clean == 0.0);
    double largest = 0;
    for (int64_t l = 0; l < r.layers; ++l)
      for (int64_t h = 0; h < r.heads; ++h) {
        CAPTURE(l, h);
        AblationSpec drop;
        drop.drop_heads = {{l, h}};
        const double want = per_spec(model, src, tgt, drop);
        CHECK(r.values[size_t(l * r.heads + h)] == Approx(want).epsilon(1e-6).margin(1e-12));
        largest = std::max(largest, want);
      }
    CHECK(largest > 1e-4);  // the heads matter: the comparison is not of zeros
  }
}

TEST_CASE("a zeroed layer of the sweep equals LayerDrop pruning of that layer", "[ablation][sweep]") {
  for (const std::string preset : {"tiny-decoder", "tiny-encoder-decoder", "tiny-xl"}) {
    CAPTURE(preset);
    const ModelConfig c = preset_test::small_preset_config(preset);
    const Model model(c, init_params(c, 5));
    const auto [src, tgt] = model.tokenize("hello there", c.architecture == Architecture::EncoderDecoder ? "hi" : "");
    SweepSpec spec;
    spec.unit = SweepUnit::Layers;
    const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
    REQUIRE(r.heads == 1);
    for (int64_t l = 0; l < r.layers; ++l) {
      AblationSpec drop;
      drop.drop_layers = {l};
      CHECK(r.values[size_t(l)] == Approx(per_spec(model, src, tgt, drop)).epsilon(1e-6));
    }
  }
  SECTION("the only layer of a stack: n/a, not a refusal of the whole sweep") {
    const ModelConfig c = preset_test::small_preset_config("tiny-ut-act");  // one shared layer
    const Model model(c, init_params(c, 5));
    const auto [src, tgt] = model.tokenize("abc", "");
    SweepSpec spec;
    spec.unit = SweepUnit::Layers;
    const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
    REQUIRE(r.values.size() == 1);
    CHECK(std::isnan(r.values[0]));
  }
}

TEST_CASE("a mean-ablated head equals W^O zeroed plus W^O times the head's mean output in the bias",
          "[ablation][sweep]") {
  ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  c.n_layers = 1;
  c.positional = Positional::Sinusoidal;
  ParamStore p = init_params(c, 3);
  const Model model(c, p);
  const auto [src, tgt] = model.tokenize("mean ablation", "");
  const int64_t L = int64_t(src.size()), d = c.d_model, H = c.n_heads, dh = c.d_head();

  // The head's outputs z_h[i] = sum_j A_h[i, j] v_j, with v from the layer's normed input,
  // written with plain loops from the traced positions and attention.
  RunOptions traced;
  traced.trace.positional = true;
  const RunResult run = model.forward(src, tgt, traced);
  const Tensor& pos = run.trace.find("positional")->tensor;
  const Tensor& attn = run.trace.find(attention_array_name(*run.trace.attention_maps.begin()))->tensor;
  const std::vector<double> v = naive::layer0_values(c, p, src, pos);
  SweepSpec spec;
  spec.mode = AblationMode::Mean;
  const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
  for (int64_t h = 0; h < H; ++h) {
    CAPTURE(h);
    std::vector<double> zbar(static_cast<size_t>(dh), 0.0);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t e = 0; e < dh; ++e) {
        double z = 0;
        for (int64_t j = 0; j < L; ++j) z += double(attn.data[size_t((h * L + i) * L + j)]) * v[size_t(j * d + h * dh + e)];
        zbar[size_t(e)] += z / double(L);
      }
    ParamStore q = p;
    Tensor& wo = q.at("decoder.layer0.self_attn.wo");
    Tensor& bo = q.at("decoder.layer0.self_attn.bo");
    for (int64_t o = 0; o < d; ++o) {
      double add = 0;
      for (int64_t e = 0; e < dh; ++e) {
        add += double(wo.data[size_t(o * d + h * dh + e)]) * zbar[size_t(e)];
        wo.data[size_t(o * d + h * dh + e)] = 0.0f;
      }
      bo.data[size_t(o)] += float(add);
    }
    const RunResult oracle = Model(c, q).forward(src, tgt, RunOptions{});
    SweepSpec kl;
    const double want = sweep_metric(kl, run, oracle, src);
    CHECK(r.values[size_t(h)] == Approx(want).epsilon(2e-3).margin(1e-7));
    CHECK(want > 1e-5);
    // Mean ablation keeps the head's average contribution: it differs from zeroing it.
    SweepSpec zero;
    CHECK(std::fabs(r.values[size_t(h)] - ablation_sweep(model, src, tgt, zero, RunOptions{}).values[size_t(h)]) > 1e-7);
  }
}

TEST_CASE("sweep metrics: loss and logit difference recomputed from the ablated logits", "[ablation][sweep]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 9));
  const auto [src, tgt] = model.tokenize("the cat sat", "");
  const int64_t L = int64_t(src.size());
  AblationSpec drop;
  drop.drop_heads = {{1, 2}};
  const RunResult ablated = ablated_model(model, drop).forward(src, tgt, RunOptions{});
  const RunResult clean = model.forward(src, tgt, RunOptions{});
  SECTION("loss: mean of -log p(next token)") {
    SweepSpec spec;
    spec.metric = SweepMetric::Loss;
    const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
    double loss = 0, clean_loss = 0;
    for (int64_t i = 0; i + 1 < L; ++i) {
      loss -= log_softmax_row(ablated.output, i)[size_t(src[size_t(i + 1)].id)] / double(L - 1);
      clean_loss -= log_softmax_row(clean.output, i)[size_t(src[size_t(i + 1)].id)] / double(L - 1);
    }
    CHECK(r.clean == Approx(clean_loss).epsilon(1e-6));
    CHECK(r.values[size_t(1 * r.heads + 2)] == Approx(loss).epsilon(1e-5));
    CHECK(r.effect(1, 2) == Approx(loss - clean_loss).epsilon(1e-4).margin(1e-9));
  }
  SECTION("logit difference at a chosen position") {
    SweepSpec spec;
    spec.metric = SweepMetric::LogitDiff;
    spec.token_a = single_token_id(model, "a", "A");
    spec.token_b = single_token_id(model, "#116", "B");  // 't'
    spec.position = 2;
    CHECK(spec.token_a == 'a');
    const SweepResult r = ablation_sweep(model, src, tgt, spec, RunOptions{});
    const int64_t V = clean.output.shape[1];
    CHECK(r.position == 2);
    CHECK(r.clean == Approx(double(clean.output.data[size_t(2 * V + 'a')]) - clean.output.data[size_t(2 * V + 't')]));
    CHECK(r.values[size_t(1 * r.heads + 2)] ==
          Approx(double(ablated.output.data[size_t(2 * V + 'a')]) - ablated.output.data[size_t(2 * V + 't')]).epsilon(1e-5));
  }
}

TEST_CASE("sweeps that cannot apply are refused naming the problem", "[ablation][sweep]") {
  const ModelConfig enc = preset_test::small_preset_config("tiny-encoder");
  const Model encoder(enc, init_params(enc, 1));
  const auto [src, tgt] = encoder.tokenize("abc", "");
  SweepSpec loss;
  loss.metric = SweepMetric::Loss;
  if (enc.output == OutputHead::None) {
    CHECK_THROWS_WITH(check_sweep(encoder, src, tgt, loss), Catch::Contains("output head"));
    SweepSpec kl;
    CHECK_THROWS_WITH(check_sweep(encoder, src, tgt, kl), Catch::Contains("use cosine"));
  } else {
    CHECK_THROWS_WITH(check_sweep(encoder, src, tgt, loss), Catch::Contains("encoder"));
  }
  const ModelConfig dec = preset_test::small_preset_config("tiny-decoder");
  const Model decoder(dec, init_params(dec, 1));
  const auto [dsrc, dtgt] = decoder.tokenize("abc", "");
  SweepSpec diff;
  diff.metric = SweepMetric::LogitDiff;
  diff.token_a = 1;
  diff.token_b = 99999;
  CHECK_THROWS_WITH(check_sweep(decoder, dsrc, dtgt, diff), Catch::Contains("outside the vocabulary"));
  diff.token_b = 2;
  diff.position = 3;
  CHECK_THROWS_WITH(check_sweep(decoder, dsrc, dtgt, diff), Catch::Contains("position 3"));
  CHECK_THROWS_WITH(single_token_id(decoder, "ab", "--token-a"), Catch::Contains("2 tokens"));
  CHECK_THROWS_WITH(single_token_id(decoder, "#256", "--token-a"), Catch::Contains("outside the vocabulary"));
  CHECK_THROWS_WITH(parse_sweep_metric("kld", "--metric"), Catch::Contains("kl, loss, logit-diff, cosine"));
  const ModelConfig ut = preset_test::small_preset_config("tiny-ut-act");
  const Model universal(ut, init_params(ut, 1));
  const auto [usrc, utgt] = universal.tokenize("abc", "");
  SweepSpec mean_layers;
  mean_layers.unit = SweepUnit::Layers;
  mean_layers.mode = AblationMode::Mean;
  CHECK_THROWS_WITH(check_sweep(universal, usrc, utgt, mean_layers), Catch::Contains("standard layer stack"));
}

TEST_CASE("a sweep stops when cancelled", "[ablation][sweep]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 2));
  const auto [src, tgt] = model.tokenize("cancel me", "");
  std::atomic<bool> cancel{false};
  RunOptions o;
  o.cancel = &cancel;
  int64_t calls = 0;
  CHECK_THROWS_AS(ablation_sweep(model, src, tgt, SweepSpec{}, o,
                                 [&](int64_t done, int64_t) {
                                   ++calls;
                                   if (done == 3) cancel = true;
                                 }),
                  Cancelled);
  CHECK(calls == 3);
}

TEST_CASE("a cancelled sweep keeps its finished cells, equal to the whole sweep's", "[ablation][sweep]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model model(c, init_params(c, 2));
  const auto [src, tgt] = model.tokenize("keep these", "");
  const SweepResult whole = ablation_sweep(model, src, tgt, SweepSpec{}, RunOptions{});
  REQUIRE(whole.complete);
  std::atomic<bool> cancel{false};
  RunOptions o;
  o.cancel = &cancel;
  SweepResult partial;
  // progress(1) is the clean run, progress(2 + k) cell k: cancel after cells 0..2.
  CHECK_THROWS_AS(ablation_sweep(model, src, tgt, SweepSpec{}, o,
                                 [&](int64_t done, int64_t) {
                                   if (done == 4) cancel = true;
                                 },
                                 &partial),
                  Cancelled);
  CHECK_FALSE(partial.complete);
  REQUIRE(partial.values.size() == whole.values.size());
  for (size_t k = 0; k < partial.values.size(); ++k) {
    INFO(k);
    if (k < 3) CHECK(partial.values[k] == whole.values[k]);
    else CHECK(std::isnan(partial.values[k]));
  }
  CHECK(partial.row_labels == whole.row_labels);
}
