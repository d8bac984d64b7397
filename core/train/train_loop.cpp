// Trainer: batches, gradients, Adam, checkpoints and resume (train_loop.h).
#include "core/train/train_loop.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/output_folder.h"
#include "core/formats/json_text.h"
#include "core/model/memory_budget.h"
#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/formats/safetensors.h"
#include "core/train/train_hooks.h"

namespace atlas::train {

namespace fs = std::filesystem;

namespace {

// The generator of example b of step s: independent of how many steps ran before, which is
// what makes resume exact.
Rng example_rng(uint64_t seed, int64_t step, int64_t b) {
  uint64_t s = seed;
  const uint64_t a = splitmix64(s) ^ (static_cast<uint64_t>(step) * 0xD1B54A32D192ED03ull);
  uint64_t t = a ^ (static_cast<uint64_t>(b) * 0x8CB92BA72F3D8DD7ull);
  return Rng(splitmix64(t));
}

std::string read_state_text(const fs::path& path) {
  return read_input_file(path.string(), InputKind::TrainingState);
}

nlohmann::json options_json(const TrainOptions& o, int64_t step) {
  nlohmann::json j;
  j["format"] = "attention-atlas train state";
  j["step"] = step;
  j["preset"] = o.preset;
  j["task"] = o.task;
  j["length"] = o.task_options.length;
  j["text_file"] = o.task_options.text_path;
  j["steps"] = o.steps;
  j["batch"] = o.batch;
  j["seed"] = o.seed;
  j["schedule"] = schedule_kind_name(o.schedule.kind);
  j["lr"] = o.schedule.lr;
  j["warmup"] = o.schedule.warmup;
  j["clip"] = o.clip;
  j["label_smoothing"] = o.label_smoothing;
  j["dropout"] = o.reg.dropout;
  j["attention_dropout"] = o.reg.attention_dropout;
  j["layer_drop"] = o.reg.layer_drop;
  j["drop_head"] = o.reg.drop_head;
  j["drop_head_schedule"] = o.drop_head_schedule;
  j["ponder_weight"] = o.ponder_weight;
  return j;
}

// An integer of the state within the range `atlas train` takes it in: checked on the JSON value
// (a float such as 1e300 would be undefined behaviour to convert), before step + 1, step -
// warmup or a batch of that size is computed.
int64_t state_integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)) ||
      v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw AtlasError(std::string("\"") + key + "\" is " + v.dump() +
                     ", out of range: it must be an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi));
  return v.get<int64_t>();
}

TrainOptions options_from_json(const nlohmann::json& j, int64_t& step) {
  TrainOptions o;
  o.steps = state_integer(j, "steps", 1, kMaxTrainSteps);
  step = state_integer(j, "step", 0, o.steps);
  o.preset = j.at("preset").get<std::string>();
  o.task = j.at("task").get<std::string>();
  o.task_options.length = state_integer(j, "length", 1, 256);
  o.task_options.text_path = j.at("text_file").get<std::string>();
  o.batch = state_integer(j, "batch", 1, 4096);
  if (!j.at("seed").is_number_integer() || j.at("seed").get<int64_t>() < 0)
    throw AtlasError("\"seed\" is " + j.at("seed").dump() + ", not an integer >= 0");
  o.seed = j.at("seed").get<uint64_t>();
  o.schedule.kind = parse_schedule_kind(j.at("schedule").get<std::string>());
  o.schedule.lr = j.at("lr").get<double>();
  o.schedule.warmup = state_integer(j, "warmup", 0, kMaxTrainSteps);
  o.clip = j.at("clip").get<double>();
  o.label_smoothing = j.at("label_smoothing").get<double>();
  o.reg.dropout = j.at("dropout").get<double>();
  o.reg.attention_dropout = j.at("attention_dropout").get<double>();
  o.reg.layer_drop = j.at("layer_drop").get<double>();
  o.reg.drop_head = j.at("drop_head").get<double>();
  o.drop_head_schedule = j.at("drop_head_schedule").get<bool>();
  o.ponder_weight = j.value("ponder_weight", 0.01);  // absent in checkpoints before ACT training
  return o;
}

}  // namespace

void check_writable_dir(const std::string& dir) {
  // A model folder is replaced as a whole, so what must be writable is the folder it sits in:
  // prove it by creating (and removing) a hidden sibling, as the save will.
  try {
    check_model_destination(dir);
  } catch (const AtlasError& e) {
    throw AtlasError("--out " + std::string(e.what()));
  }
  fs::path target = fs::absolute(fs::path(dir));
  if (!target.has_filename()) target = target.parent_path();
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec || !fs::is_directory(parent))
    throw AtlasError("--out " + dir + ": cannot create the folder it goes in, " + parent.string() +
                     (ec ? ": " + ec.message() : std::string(" (a file has that name)")));
  std::string probe_name = target.filename().string();  // not "." + ...: a GCC 12 false warning
  probe_name.insert(probe_name.begin(), '.');
  probe_name.append(".").append(std::to_string(::getpid())).append(".probe");
  const fs::path probe = parent / probe_name;
  fs::create_directory(probe, ec);  // false without an error: a crashed run's probe is there
  if (ec)
    throw AtlasError("--out " + dir + ": the folder " + parent.string() + " is not writable (" +
                     ec.message() + ")");
  fs::remove(probe, ec);
}

Trainer::Trainer(ModelConfig config, TrainOptions options)
    : config_(std::move(config)), o_(std::move(options)) {
  check_trainable(config_);
  task_ = make_task(o_.task, o_.task_options);
  configure_for_task(config_, task_, o_.task_options.length);
  // Training holds four float32 copies of the parameters (values, gradients, Adam's m and v):
  // refused up front when they cannot fit, before the first is initialised.
  check_weights_memory(16.0 * double(parameter_count(config_)), "training " + config_.name,
                       "parameters, gradients and Adam's two moments as float32",
                       "A smaller model trains (16 bytes a parameter)");
  params_ = to_train_params<float>(init_params(config_, o_.seed));
  finish_setup();
}

void Trainer::finish_setup() {
  if (o_.batch < 1 || o_.batch > 4096)
    throw AtlasError("batch " + std::to_string(o_.batch) + " is out of range (1..4096)");
  if (o_.steps < 1) throw AtlasError("steps must be at least 1");
  for (double p : {o_.reg.dropout, o_.reg.attention_dropout, o_.reg.layer_drop, o_.reg.drop_head})
    if (!(p >= 0.0 && p < 1.0))
      throw AtlasError("dropout, attention dropout, LayerDrop and DropHead rates must be in "
                       "[0, 1)");
  if (!(o_.label_smoothing >= 0.0 && o_.label_smoothing < 1.0))
    throw AtlasError("label smoothing must be in [0, 1)");
  validate_config(config_, "training config");
  const std::vector<const TrainHooks*> hooks = train_hooks_for(config_);  // train_hooks.h
  for (const TrainHooks* m : hooks)
    if (m->check_options) m->check_options(config_, o_);
  o_.schedule.d_model = config_.d_model;
  tokenizer_ = make_tokenizer(config_.tokenizer);
  for (const TrainHooks* m : hooks)
    if (m->lr_multipliers)
      for (const auto& [name, multiplier] : m->lr_multipliers(config_))
        adam_.set_lr_multiplier(name, multiplier);
}

StepStats Trainer::step() {
  const int64_t s = step_ + 1;
  Regularization reg = o_.reg;
  if (o_.drop_head_schedule)
    reg.drop_head = drop_head_rate(o_.reg.drop_head, s, o_.schedule.kind == ScheduleKind::Warmup
                                                            ? o_.schedule.warmup : 0, o_.steps);
  // The batch first: the labelled-token count normalises the loss, and the modules' penalties'
  // gradients are seeded per example in the same units.
  std::vector<Example> batch;
  std::vector<Rng> rngs;
  int64_t labelled = 0;
  for (int64_t b = 0; b < o_.batch; ++b) {
    rngs.push_back(example_rng(o_.seed, s, b));
    batch.push_back(make_example(config_, task_, *tokenizer_, rngs.back()));
    for (int32_t y : batch.back().labels) labelled += y >= 0;
  }
  const std::vector<const TrainHooks*> hooks = train_hooks_for(config_);
  std::vector<std::unique_ptr<TrainStepHook>> step_hooks;  // the modules' penalties and statistics
  for (const TrainHooks* m : hooks)
    if (m->begin_step) step_hooks.push_back(m->begin_step(config_, o_));
  ParamsT<float> grads;
  double loss = 0, penalty = 0;
  int64_t correct = 0, count = 0;
  for (int64_t b = 0; b < o_.batch; ++b) {
    const Example& ex = batch[size_t(b)];
    Tape<float> tape;
    const auto r = build_forward<float>(tape, config_, params_, ex, reg, &rngs[size_t(b)]);
    MatT<float> d;
    loss += smoothed_cross_entropy<float>(tape.value(r.logits), ex.labels, o_.label_smoothing,
                                          &d, &correct, &count);
    // Mean penalty over the batch after the division by `labelled` below.
    for (const auto& m : step_hooks)
      penalty += m->example_penalty(tape, r, double(labelled) / double(o_.batch)) / double(o_.batch);
    tape.backward(r.logits, d, grads);
  }
  const float inv = count ? 1.0f / static_cast<float>(count) : 0.0f;
  for (auto& [name, g] : grads) g *= inv;  // mean over labelled tokens
  StepStats st;
  st.step = s;
  st.grad_norm = clip_global_norm(grads, o_.clip);
  st.lr = o_.schedule.at(s);
  adam_.update(params_, grads, st.lr);
  for (const TrainHooks* m : hooks)
    if (m->after_step) m->after_step(config_, params_);
  st.span_penalty = penalty;
  for (const auto& m : step_hooks) m->report(st);
  st.loss = count ? loss / double(count) : 0.0;
  st.accuracy = count ? double(correct) / double(count) : 0.0;
  step_ = s;
  return st;
}

StepStats Trainer::evaluate(int64_t examples, uint64_t seed) const {
  StepStats st;
  st.step = step_;
  double loss = 0;
  int64_t correct = 0, count = 0;
  Rng rng(seed ^ 0xE7A1u);
  for (int64_t i = 0; i < examples; ++i) {
    const Example ex = make_example(config_, task_, *tokenizer_, rng);
    Tape<float> tape;
    const auto r = build_forward<float>(tape, config_, params_, ex, {}, nullptr);
    loss += smoothed_cross_entropy<float>(tape.value(r.logits), ex.labels, 0.0, nullptr,
                                          &correct, &count);
  }
  st.loss = count ? loss / double(count) : 0.0;
  st.accuracy = count ? double(correct) / double(count) : 0.0;
  return st;
}

Model Trainer::model() const { return Model(config_, to_param_store<float>(params_, config_)); }

void Trainer::save(const std::string& dir) const {
  check_model_destination(dir);
  const Model inference = model();
  ParamStore moments;
  for (const auto& spec : param_specs(config_)) {
    for (const auto* which : {&adam_.first_moments(), &adam_.second_moments()}) {
      Tensor t(spec.shape);
      auto it = which->find(spec.name);
      if (it != which->end())
        std::copy(it->second.data(), it->second.data() + it->second.size(), t.data.begin());
      moments.emplace((which == &adam_.first_moments() ? "m." : "v.") + spec.name, std::move(t));
    }
  }
  const std::string state = options_json(o_, step_).dump(2) + "\n";
  // The checkpoint as a whole: a failed save leaves the previous checkpoint in `dir` resumable,
  // never new weights beside old Adam moments.
  replace_folder(dir, [&](const std::string& staging) {
    write_model_files(inference, staging);
    write_safetensors((fs::path(staging) / "optimizer.safetensors").string(), moments,
                      {{"format", "attention-atlas adam"}, {"step", std::to_string(step_)}});
    write_file_atomically((fs::path(staging) / "train_state.json").string(), state);
  });
}

Trainer Trainer::resume(const std::string& dir) {
  const fs::path state_path = fs::path(dir) / "train_state.json";
  if (!fs::exists(state_path))
    throw AtlasError("--resume " + dir + ": no train_state.json (not a checkpoint written by "
                     "atlas train)");
  Trainer t;
  const nlohmann::json state = parse_json_text(read_state_text(state_path), state_path.string());
  try {
    t.o_ = options_from_json(state, t.step_);
  } catch (const nlohmann::json::exception& e) {
    throw AtlasError(state_path.string() + ": malformed train state: " + e.what());
  } catch (const AtlasError& e) {
    throw AtlasError(state_path.string() + ": " + e.what());
  }
  Model loaded = load_model(dir);
  t.config_ = loaded.config();
  check_trainable(t.config_);
  t.task_ = make_task(t.o_.task, t.o_.task_options);
  t.params_ = to_train_params<float>(loaded.params());
  const fs::path opt_path = fs::path(dir) / "optimizer.safetensors";
  if (!fs::exists(opt_path))
    throw AtlasError("--resume " + dir + ": no optimizer.safetensors (Adam state) to resume");
  SafetensorsFile opt = read_safetensors(opt_path.string());
  ParamsT<float> m, v;
  for (const auto& spec : param_specs(t.config_)) {
    auto mi = opt.tensors.find("m." + spec.name), vi = opt.tensors.find("v." + spec.name);
    if (mi == opt.tensors.end() || vi == opt.tensors.end() || mi->second.shape != spec.shape ||
        vi->second.shape != spec.shape)
      throw AtlasError(opt_path.string() + ": Adam moments of " + spec.name +
                       " are missing or mis-shaped");
    ParamStore one{{spec.name, mi->second}}, two{{spec.name, vi->second}};
    m.emplace(spec.name, to_train_params<float>(one).at(spec.name));
    v.emplace(spec.name, to_train_params<float>(two).at(spec.name));
  }
  t.adam_.set_state(t.step_, std::move(m), std::move(v));
  t.finish_setup();
  return t;
}

}  // namespace atlas::train
