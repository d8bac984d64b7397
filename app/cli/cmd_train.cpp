// atlas train: train a small vanilla model on a generated task (core/train/train_loop.h).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "app/checked_writes.h"
#include "app/cli/commands.h"
#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/model/presets.h"
#include "core/train/train_loop.h"

namespace atlas::cli {

namespace fs = std::filesystem;

namespace {

const char* kTrainUsage =
    "usage: atlas train --preset NAME --task TASK [--steps N] [--batch B] [--out DIR]\n"
    "                   [--lr X] [--schedule warmup|constant] [--warmup W] [--seed S]\n"
    "                   [--length N] [--text-file PATH] [--d-model D] [--layers N]\n"
    "                   [--heads H] [--d-ff F] [--dropout P] [--attention-dropout P]\n"
    "                   [--layer-drop P] [--drop-head P] [--label-smoothing E] [--clip C]\n"
    "                   [--ponder-weight W] [--log-every N] [--eval N] [--json] [--force]\n"
    "       atlas train --resume DIR [--steps N] [--out DIR] [--json] [--force]\n"
    "  Trains a vanilla, adaptive-span or Universal Transformer (fixed steps or ACT) preset\n"
    "  (encoder, decoder, encoder-decoder; UT: encoder or decoder) on a task and\n"
    "  writes a checkpoint DIR that `atlas run DIR` and the app open (config.json,\n"
    "  model.safetensors) plus optimizer.safetensors and train_state.json for --resume.\n"
    "  Tasks: copy, reverse, sort, recall, induction, parity, addition, char-lm (--text-file).\n"
    "  --lr: with the warmup schedule (default) a multiplier of seed 002's\n"
    "  d^-0.5 min(step^-0.5, step warmup^-1.5) (default 1); with constant, the rate (1e-3).\n"
    "  --steps N is the run's total: a resumed run continues up to step N.\n"
    "  --out DIR holding a model is refused before training unless --force is given\n"
    "  (--resume DIR saves back into DIR without it); the checkpoint is written beside\n"
    "  DIR and swapped in as a whole, so a failed save keeps the old one.\n"
    "  --ponder-weight W: ACT's ponder cost mean(N(t) + R(t)) times W joins the loss (0.01).\n"
    "  --json prints one object per logged step: {\"step\",\"loss\",\"accuracy\",\"lr\",...}.\n"
    "  See docs/training.md for how to type a task example into the app.\n";

double get_double(const Args& a, const std::string& key, double fallback, double lo, double hi) {
  auto v = a.get(key);
  if (!v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(d))
    throw AtlasError(key + " must be a number, got \"" + *v + "\"");
  if (d < lo || d > hi)
    throw AtlasError(key + " must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi) + ", got " + *v);
  return d;
}

// The first config field that differs between a checkpoint and what the options ask for.
std::string config_difference(const ModelConfig& saved, const ModelConfig& wanted) {
  auto a = nlohmann::json::parse(config_to_json(saved));
  auto b = nlohmann::json::parse(config_to_json(wanted));
  for (const char* k : {"name", "description"}) a.erase(k), b.erase(k);
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || b[it.key()] != it.value())
      return it.key() + " is " + it.value().dump() + " in the checkpoint but " +
             (b.contains(it.key()) ? b[it.key()].dump() : std::string("absent")) +
             " for these options";
  return {};
}

ModelConfig preset_for_training(const Args& a, const std::string& preset) {
  ModelConfig c = preset_config(preset);
  c.d_model = a.get_int("--d-model", c.d_model, 2, 4096);
  c.n_heads = a.get_int("--heads", c.n_heads, 1, 256);
  c.d_ff = a.get_int("--d-ff", c.d_ff, 1, 16384);
  c.n_layers = a.get_int("--layers", c.n_layers, 1, 64);
  if (c.architecture == Architecture::EncoderDecoder)
    c.n_decoder_layers = a.get_int("--layers", c.n_decoder_layers, 1, 64);
  if (c.d_model % c.n_heads)
    throw AtlasError("--d-model " + std::to_string(c.d_model) + " is not divisible by " +
                     std::to_string(c.n_heads) + " heads");
  return c;
}

void draw_progress(int64_t step, int64_t total, const train::StepStats& s) {
  const int width = 30;
  const int filled = static_cast<int>(width * step / std::max<int64_t>(1, total));
  std::fprintf(stderr, "\r[%.*s%.*s] %lld/%lld loss %.4f acc %5.1f%%", filled,
               "##############################", width - filled,
               "..............................", static_cast<long long>(step),
               static_cast<long long>(total), s.loss, 100.0 * s.accuracy);
  std::fflush(stderr);
}

}  // namespace

int cmd_train(const std::vector<std::string>& args) {
  if (wants_help(args, kTrainUsage)) return 0;
  Args a(args, {{"--preset", "--task", "--steps", "--batch", "--lr", "--schedule", "--warmup",
                 "--seed", "--out", "--resume", "--length", "--text-file", "--d-model",
                 "--layers", "--heads", "--d-ff", "--dropout", "--attention-dropout",
                 "--layer-drop", "--drop-head", "--label-smoothing", "--clip", "--log-every",
                 "--eval", "--ponder-weight"},
                {"--json", "--force"}});
  if (!a.positionals().empty()) throw AtlasError("unexpected argument " + a.positionals()[0]);
  const bool json = a.has("--json");
  const long long kMaxSteps = 100000000;

  std::unique_ptr<train::Trainer> trainer;
  if (auto dir = a.get("--resume")) {
    trainer = std::make_unique<train::Trainer>(train::Trainer::resume(*dir));
    train::TrainOptions& o = trainer->options();
    if (a.has("--task") && a.require("--task") != o.task)
      throw AtlasError("--resume " + *dir + " was trained on task " + o.task + ", not " +
                       a.require("--task"));
    if (a.has("--preset")) {
      ModelConfig wanted = preset_for_training(a, a.require("--preset"));
      train::configure_for_task(wanted, trainer->task(), o.task_options.length);
      const std::string diff = config_difference(trainer->config(), wanted);
      if (!diff.empty())
        throw AtlasError("--resume " + *dir + " has a different config than --preset " +
                         a.require("--preset") + ": " + diff);
    }
    o.steps = a.get_int("--steps", o.steps, 1, kMaxSteps);
    if (o.steps <= trainer->steps_done())
      throw AtlasError("--resume " + *dir + " has already trained " +
                       std::to_string(trainer->steps_done()) + " steps; pass --steps above that");
  } else {
    train::TrainOptions o;
    o.preset = a.require("--preset");
    if (!a.has("--task")) throw AtlasError("missing --task (copy, reverse, sort, recall, "
                                           "induction, parity, addition, char-lm)");
    o.task = a.require("--task");
    o.steps = a.get_int("--steps", 1000, 1, kMaxSteps);
    o.batch = a.get_int("--batch", 16, 1, 4096);
    o.seed = static_cast<uint64_t>(a.get_int("--seed", 1, 0, INT64_MAX));
    o.task_options.length = a.get_int("--length", 8, 1, 256);
    o.task_options.text_path = a.get_or("--text-file", "");
    o.schedule.kind = train::parse_schedule_kind(a.get_or("--schedule", "warmup"));
    o.schedule.lr = get_double(a, "--lr", o.schedule.kind == train::ScheduleKind::Warmup ? 1.0
                                                                                         : 1e-3,
                               0.0, 100.0);
    o.schedule.warmup = a.get_int("--warmup", 100, 1, kMaxSteps);
    o.clip = get_double(a, "--clip", 1.0, 0.0, 1e6);
    o.label_smoothing = get_double(a, "--label-smoothing", 0.0, 0.0, 0.99);
    o.reg.dropout = get_double(a, "--dropout", 0.0, 0.0, 0.95);
    o.reg.attention_dropout = get_double(a, "--attention-dropout", 0.0, 0.0, 0.95);
    o.reg.layer_drop = get_double(a, "--layer-drop", 0.0, 0.0, 0.95);
    o.reg.drop_head = get_double(a, "--drop-head", 0.0, 0.0, 0.95);
    o.ponder_weight = get_double(a, "--ponder-weight", 0.01, 0.0, 100.0);
    ModelConfig c = preset_for_training(a, o.preset);
    c.name = o.preset + "-" + o.task;
    trainer = std::make_unique<train::Trainer>(std::move(c), std::move(o));
  }
  train::TrainOptions& o = trainer->options();
  const std::string out = a.get_or("--out", a.get_or("--resume", ""));
  if (!out.empty()) {  // fail before the work, not after
    train::check_writable_dir(out);
    std::error_code ec;
    const bool into_resumed = a.has("--resume") && fs::equivalent(out, a.require("--resume"), ec);
    if (!into_resumed && !a.has("--force") && check_model_destination(out))
      throw AtlasError("--out " + out + " already holds a model; pass --force to replace it" +
                       (!a.has("--resume") && fs::exists(fs::path(out) / "train_state.json", ec)
                            ? " (or --resume " + out + " to continue training it)"
                            : ""));
  }
  const int64_t log_every = a.get_int("--log-every", std::max<int64_t>(1, o.steps / 20), 1,
                                      kMaxSteps);
  const int64_t eval_examples = a.get_int("--eval", 200, 0, 100000);
  const bool tty = isatty(2);

  if (!json)
    std::printf("training %s on %s: %lld parameters, %lld steps of %lld examples\n",
                trainer->config().name.c_str(), o.task.c_str(),
                static_cast<long long>(parameter_count(trainer->config())),
                static_cast<long long>(o.steps - trainer->steps_done()),
                static_cast<long long>(o.batch));
  const auto start = std::chrono::steady_clock::now();
  while (trainer->steps_done() < o.steps) {
    const train::StepStats s = trainer->step();
    if (tty) draw_progress(s.step, o.steps, s);
    if (s.step % log_every == 0 || s.step == o.steps) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (tty) std::fputc('\n', stderr);
      if (json) {
        nlohmann::json j{{"step", s.step},          {"loss", s.loss},
                         {"accuracy", s.accuracy},  {"lr", s.lr},
                         {"grad_norm", s.grad_norm}, {"seconds", secs}};
        if (s.mean_span >= 0) {
          j["mean_span"] = s.mean_span;
          j["span_penalty"] = s.span_penalty;
        }
        if (s.ponder >= 0) {
          j["ponder"] = s.ponder;
          j["ponder_cost"] = s.span_penalty;
        }
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("step %lld  loss %.4f  accuracy %.1f%%  lr %.3g  grad-norm %.3g\n",
                    static_cast<long long>(s.step), s.loss, 100.0 * s.accuracy, s.lr,
                    s.grad_norm);
        if (s.mean_span >= 0)
          std::printf("          mean span %.2f  span penalty %.3g\n", s.mean_span,
                      s.span_penalty);
        if (s.ponder >= 0)
          std::printf("          ponder N+R %.2f  weighted ponder cost %.3g\n", s.ponder, s.span_penalty);
      }
      app::flush_standard_output();  // progress as it comes; a failure is said at exit
    }
  }
  if (eval_examples > 0) {
    const train::StepStats e = trainer->evaluate(eval_examples, o.seed + 1);
    if (json)
      std::printf("%s\n", nlohmann::json{{"eval_examples", eval_examples}, {"eval_loss", e.loss},
                                         {"eval_accuracy", e.accuracy}}.dump().c_str());
    else
      std::printf("held-out: loss %.4f  accuracy %.1f%% on %lld fresh examples\n", e.loss,
                  100.0 * e.accuracy, static_cast<long long>(eval_examples));
  }
  if (!out.empty()) {
    trainer->save(out);
    if (!json) {
      Rng rng(o.seed + 2);
      std::string input, output;
      trainer->task().sample(rng, input, output);
      const auto typed = train::typed_example(trainer->config(), trainer->task(), input, output);
      std::printf("wrote %s; try: atlas run %s --text '%s'%s\n", out.c_str(), out.c_str(),
                  typed.source.c_str(),
                  typed.target.empty() ? "" : (" --target '" + typed.target + "'").c_str());
    }
  } else if (!json) {
    std::printf("no --out given: the trained model was not saved\n");
  }
  return 0;
}

}  // namespace atlas::cli
