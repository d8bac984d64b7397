// Training speed: optimisation steps per second of small vanilla models on the copy
// task, and the ratio of one step's time to the forward time of the same batch, measured in
// the same run: the tape's forward alone, and the inference engine's Model::forward (one
// example at a time, as the trainer runs). One thread.
// A second table compares reversible layers (activations recomputed in the backward) with the
// same decoder's plain stack: step time and the tape's stored bytes after one forward.
// Usage: bench_train [--steps N]
// Prints markdown tables (docs/PERFORMANCE.md, "Training").
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/model/model.h"
#include "core/model/presets.h"
#include "core/train/train_loop.h"

using namespace atlas;
using namespace atlas::train;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct StackCost {
  double step_ms;
  double tape_kb;
};

// A pre-norm tiny-decoder of `layers` layers (d 64, ff 256) on copy, plain or reversible.
StackCost stack_cost(int64_t layers, bool reversible, int64_t steps) {
  ModelConfig c = preset_config("tiny-decoder");
  c.d_model = 64;
  c.d_ff = 256;
  c.n_layers = layers;
  c.norm_position = NormPosition::Pre;
  if (reversible) c.stack = ReversibleConfig{};
  TrainOptions o;
  o.task = "copy";
  o.steps = steps + 5;
  o.batch = 16;
  Trainer trainer(c, o);
  for (int i = 0; i < 5; ++i) trainer.step();
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) trainer.step();
  const double step_ms = seconds_since(t0) / double(steps) * 1e3;
  const auto tok = make_tokenizer(trainer.config().tokenizer);
  Rng rng(3);
  const Example ex = make_example(trainer.config(), trainer.task(), *tok, rng);
  Tape<float> tape;
  build_forward<float>(tape, trainer.config(), trainer.params(), ex, {}, nullptr);
  return {step_ms, double(tape.stored_bytes()) / 1024.0};
}

struct BenchShape {
  const char* preset;
  int64_t d_model, d_ff;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 100;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--steps")) steps = std::stoll(argv[i + 1]);
  Eigen::setNbThreads(1);
  std::printf("| model | params | batch x tokens | steps/s | step (ms) | tape forward (ms) | "
              "engine forward (ms) | step / tape fwd | step / engine fwd |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const BenchShape& s : {BenchShape{"tiny-decoder", 32, 64}, BenchShape{"tiny-decoder", 64, 256},
                         BenchShape{"tiny-encoder-decoder", 64, 256}}) {
    ModelConfig c = preset_config(s.preset);
    c.d_model = s.d_model;
    c.d_ff = s.d_ff;
    TrainOptions o;
    o.task = "copy";
    o.steps = steps + 10;
    o.batch = 16;
    Trainer trainer(c, o);
    for (int i = 0; i < 10; ++i) trainer.step();  // warm caches and allocators
    auto t0 = Clock::now();
    for (int64_t i = 0; i < steps; ++i) trainer.step();
    const double step_s = seconds_since(t0) / double(steps);

    // The same batches' forward alone: tape (no backward) and the inference engine.
    const ModelConfig& tc = trainer.config();
    const Model model = trainer.model();
    const auto tok = make_tokenizer(tc.tokenizer);
    std::vector<Example> batch;
    Rng rng(3);
    for (int64_t b = 0; b < o.batch; ++b) batch.push_back(make_example(tc, trainer.task(), *tok, rng));
    const int reps = static_cast<int>(std::max<int64_t>(10, steps));
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r)
      for (const Example& ex : batch) {
        Tape<float> tape;
        build_forward<float>(tape, tc, trainer.params(), ex, {}, nullptr);
      }
    const double tape_s = seconds_since(t0) / reps;
    RunOptions ro;
    ro.trace = TraceOptions::none();
    std::vector<std::vector<TokenInfo>> src(batch.size()), tgt(batch.size());
    for (size_t b = 0; b < batch.size(); ++b) {
      for (int32_t id : batch[b].source) src[b].push_back({id, ""});
      for (int32_t id : batch[b].target) tgt[b].push_back({id, ""});
    }
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r)
      for (size_t b = 0; b < batch.size(); ++b) model.forward(src[b], tgt[b], ro);
    const double engine_s = seconds_since(t0) / reps;
    const int64_t tokens = static_cast<int64_t>(batch[0].source.size() + batch[0].target.size());
    std::printf("| %s d%lld ff%lld | %lld | %lld x %lld | %.1f | %.2f | %.2f | %.2f | %.1f | "
                "%.1f |\n",
                s.preset, static_cast<long long>(s.d_model), static_cast<long long>(s.d_ff),
                static_cast<long long>(parameter_count(tc)), static_cast<long long>(o.batch),
                static_cast<long long>(tokens), 1.0 / step_s, step_s * 1e3, tape_s * 1e3,
                engine_s * 1e3, step_s / tape_s, step_s / engine_s);
  }

  std::printf("\n| decoder d64 ff256, copy 8 | plain step (ms) | reversible step (ms) | reversible / "
              "plain | plain tape (KB) | reversible tape (KB) |\n|---|---|---|---|---|---|\n");
  for (int64_t layers : {2, 6, 12}) {
    const StackCost plain = stack_cost(layers, false, steps / 2), rev = stack_cost(layers, true, steps / 2);
    std::printf("| %lld layers | %.2f | %.2f | %.2f | %.0f | %.0f |\n", static_cast<long long>(layers),
                plain.step_ms, rev.step_ms, rev.step_ms / plain.step_ms, plain.tape_kb, rev.tape_kb);
  }
  return 0;
}
