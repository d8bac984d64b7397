// Adaptive span on the training tape (core/variants/adaptive_span/train_span.h): gradients against central finite
// differences in double (h = 1e-5, tolerance 1e-6 relative, as test_train_grad.cpp), the
// training forward against the inference engine's span attention, and the L1 penalty against
// its hand value. Spans are chosen off the mask's kinks (z and z + R not integers), where the
// clamp has no derivative.
#include <unistd.h>  // getpid: temp names of this process (test runs may share /tmp)
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/tensor/random.h"
#include "core/train/train_model.h"
#include "core/train/train_loop.h"
#include "core/variants/adaptive_span/train_span.h"
#include "tests/core/finite_differences.h"

using namespace atlas;
using namespace atlas::train;
using MD = MatT<double>;
using fd::check_gradients;
using fd::random_mat;

namespace {



void check_span_op(bool dynamic, SpanMaskMode mode, bool causal) {
  Rng rng(21);
  const int H = 2;
  ParamsT<double> p{{"q", random_mat(rng, 6, 8)}, {"k", random_mat(rng, 6, 8)},
                    {"v", random_mat(rng, 6, 8)}};
  if (dynamic) {
    p["x"] = random_mat(rng, 6, 4);
    p["span_v"] = random_mat(rng, H, 4);
    p["span_b"] = random_mat(rng, 1, H);
  } else {
    p["z"] = MD(1, H);
    p["z"] << 1.3, 2.6;  // R = 2: keys at distance 0..3 (head 0) and 0..4 (head 1) on the ramp
  }
  const MD weights = random_mat(rng, 6, 8);
  check_gradients(p, [&](const ParamsT<double>& q, ParamsT<double>* grads) {
    Tape<double> t;
    auto P = [&](const char* n) { return t.param(n, q.at(n)); };
    const int z = dynamic ? t.scaled_sigmoid(t.linear(P("x"), P("span_v"), P("span_b")), 5.0)
                          : P("z");
    AttentionSpec<double> spec;
    spec.heads = H;
    spec.scale = 0.5;
    spec.causal = causal;
    const int out = span_attention(t, P("q"), P("k"), P("v"), z, spec, {2, 5, mode});
    const double loss = t.value(out).cwiseProduct(weights).sum() +
                        span_penalty<double>(t, AdaptiveSpanConfig{}, {z}, grads ? 1e4 : 0.0) * 1e4;
    if (grads) t.backward(out, weights, *grads);
    return loss;
  });
}

}  // namespace

TEST_CASE("span attention backward matches finite differences", "[train][grad][span]") {
  SECTION("learned z, mask inside the softmax") { check_span_op(false, SpanMaskMode::Inside, false); }
  SECTION("learned z, causal, mask after the softmax") { check_span_op(false, SpanMaskMode::After, true); }
  SECTION("dynamic z, causal, inside") { check_span_op(true, SpanMaskMode::Inside, true); }
  SECTION("dynamic z, after") { check_span_op(true, SpanMaskMode::After, false); }
}

TEST_CASE("whole-model gradients with adaptive span", "[train][grad][span]") {
  for (bool dynamic : {false, true}) {
    INFO("dynamic " << dynamic);
    ModelConfig c;
    c.architecture = Architecture::Decoder;
    c.vocab_size = 7;
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 12;
    c.n_layers = 2;
    c.max_positions = 16;
    c.attention_kind = SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}};
    c.adaptive_span()->max_span = 6;
    c.adaptive_span()->ramp = 2;
    c.adaptive_span()->init_z = 1.5f;
    c.adaptive_span()->dynamic = dynamic;
    c.adaptive_span()->loss_coeff = 0.01f;
    ParamsT<double> params = to_train_params<double>(init_params(c, 3));
    Rng noise(4);
    for (auto& [name, m] : params)
      for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] += (name.ends_with("span_z") ? 0.2 : 0.1) * noise.normal();
    const Example ex{{1, 2, 3, 4, 0, 5}, {}, {2, 3, 4, 0, 5, -1}};
    check_gradients(params, [&](const ParamsT<double>& p, ParamsT<double>* grads) {
      Tape<double> tape;
      const auto r = build_forward<double>(tape, c, p, ex, {}, nullptr);
      MD d;
      double loss = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, 0.0,
                                                   grads ? &d : nullptr, nullptr, nullptr);
      loss += span_penalty<double>(tape, *c.adaptive_span(), r.span_z_nodes, grads ? 1.0 : 0.0);
      if (grads) tape.backward(r.logits, d, *grads);
      return loss;
    }, 1e-6, 12);
  }
}

TEST_CASE("span training forward equals the inference engine's span attention", "[train][span]") {
  for (const char* preset : {"tiny-span", "tiny-span-dynamic"})
    for (SpanMaskMode mode : {SpanMaskMode::Inside, SpanMaskMode::After}) {
      INFO(preset << " mode " << static_cast<int>(mode));
      ModelConfig c = preset_config(preset);
      c.adaptive_span()->mode = mode;
      c.adaptive_span()->init_z = 3.5f;  // keys beyond z + R = 7.5 get weight 0
      const ParamStore store = init_params(c, 9);
      const Model model(c, store);
      std::vector<TokenInfo> toks;
      std::vector<int32_t> ids;
      for (int i = 0; i < 12; ++i) {
        ids.push_back(97 + (i * 7) % 26);
        toks.push_back({ids.back(), "x"});
      }
      const RunResult ref = model.forward(toks, {}, {});
      Tape<float> tape;
      const auto params = to_train_params<float>(store);
      const auto r = build_forward<float>(tape, c, params, {ids, {}, {}}, {}, nullptr);
      const MatT<float>& got = tape.value(r.logits);
      double worst = 0;
      for (int64_t i = 0; i < ref.output.numel(); ++i)
        worst = std::max(worst, double(std::abs(got.data()[i] - ref.output.data[i])));
      CHECK(worst < 1e-4);
      REQUIRE(r.span_z_nodes.size() == 2);
    }
}

TEST_CASE("span penalty equals loss_coeff times the sum of spans", "[train][span]") {
  ModelConfig c;
  c.attention_kind =
      SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{.max_span = 10, .loss_coeff = 0.5f}};
  Tape<double> t;
  MD learned(1, 3);
  learned << 2, 4, 12;  // 12 is clamped to S = 10
  MD dynamic(2, 2);
  dynamic << 1, 3, 5, 7;  // per head, mean over the two positions: 3 and 5
  const int a = t.constant(learned), b = t.constant(dynamic);
  // 0.5 * ((2 + 4 + 10) + (3 + 5)) = 12
  CHECK(span_penalty<double>(t, *c.adaptive_span(), {a, b}, 2.0) == Approx(12.0));
  CHECK(t.grad(a)(0, 0) == Approx(1.0));   // coeff * weight
  CHECK(t.grad(b)(1, 1) == Approx(0.5));   // coeff * weight / 2 positions
}

TEST_CASE("copy beyond the initial reach: one head's span grows until it covers the distance",
          "[train][span][slow]") {
  // tiny-span starts every head at z = 6, so a key is visible up to z + R = 10 tokens back.
  // Copying 12 letters with ONE layer needs a look-back of 12, and one layer has no other
  // route (two layers could relay the letter in two hops of <= 10, which is why a 2-layer
  // version of this test was seed- and SIMD-dependent). So solving the task implies a head
  // whose mask m_z(12) = (R + z - 12) / R is positive, i.e. z > 8: the span must have grown.
  // Measured over seeds 1-6, native and ASan builds: accuracy 1.00, largest z 8.1 to 11.7,
  // while the unneeded heads mostly shrink to 0 under the L1 penalty.
  ModelConfig c = preset_config("tiny-span");
  c.d_model = 32;
  c.d_ff = 64;
  c.n_layers = 1;
  TrainOptions o;
  o.task = "copy";
  o.task_options.length = 12;
  o.steps = 600;
  o.schedule.warmup = 100;
  Trainer trainer(c, o);
  StepStats last;
  while (trainer.steps_done() < o.steps) last = trainer.step();
  float max_z = 0;
  for (const auto& [name, m] : trainer.params())
    if (name.ends_with(".span_z")) max_z = std::max(max_z, m.maxCoeff());
  CHECK(last.accuracy > 0.9);
  CHECK(max_z > 12.0f - c.adaptive_span()->ramp);
  CHECK(max_z <= 64.0f);  // clamped to S after every step
}

TEST_CASE("a local task: character language modelling shrinks the spans far below S",
          "[train][span][slow]") {
  // Text of random short words: predicting the next character needs only the current word,
  // so the penalty and the loss pull every span down (S = 64, start 6). Measured with the
  // same settings on README.md: mean z ~1 after 200 steps.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("atlas_train_span_words-" + std::to_string(::getpid()) + ".txt");
  {
    const char* words[] = {"the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far",
                           "to", "see", "big", "red", "sun", "set"};
    Rng rng(12);
    std::ofstream out(path);
    for (int i = 0; i < 1500; ++i) out << words[rng.next() % 16] << (i % 12 == 11 ? ".\n" : " ");
  }
  ModelConfig c = preset_config("tiny-span");
  c.d_model = 32;
  c.d_ff = 64;
  TrainOptions o;
  o.task = "char-lm";
  o.task_options = {32, path.string()};
  o.steps = 200;
  Trainer trainer(c, o);
  StepStats last;
  while (trainer.steps_done() < o.steps) last = trainer.step();
  CHECK(last.mean_span >= 0.0);
  CHECK(last.mean_span < 0.25 * 64);
  std::filesystem::remove(path);
}
