#pragma once
// The training loop: batches drawn from a task, the tape's gradients, Adam with seed 002's
// schedule, clipping, the regularisers, and checkpoints a Model loads. Every random draw of
// step s (its batch, dropout, LayerDrop, DropHead) comes from a generator seeded by
// (seed, s), so a run resumed from a checkpoint repeats the uninterrupted run exactly.
// Checkpoint directory: config.json + model.safetensors (the project's model format, loadable
// by `atlas run DIR` and the GUI), optimizer.safetensors (Adam moments "m.NAME", "v.NAME") and
// train_state.json (step and the training options).
#include <cstdint>
#include <memory>
#include <string>

#include "core/model/model.h"
#include "core/train/train_model.h"
#include "core/train/train_optim.h"
#include "core/train/train_tasks.h"

namespace atlas::train {

// The most steps a run may have (atlas train --steps; a checkpoint's train_state.json).
constexpr int64_t kMaxTrainSteps = 100'000'000;

struct TrainOptions {
  std::string preset;           // recorded in train_state.json
  std::string task = "copy";
  TaskOptions task_options;
  int64_t steps = 1000;         // total steps of the run (a resumed run continues up to this)
  int64_t batch = 16;
  uint64_t seed = 1;
  Schedule schedule;            // d_model filled from the config
  double clip = 1.0;            // global gradient-norm clip, 0 = off
  double label_smoothing = 0.0;
  Regularization reg;
  bool drop_head_schedule = true;  // V-shaped DropHead rate (warm-up steps down, then up)
  // Universal Transformer with ACT: weight of the ponder cost mean_t(N(t) + R(t)) added to the
  // loss (tensor2tensor's act_loss_weight default).
  double ponder_weight = 0.01;
};

struct StepStats {
  int64_t step = 0;
  double loss = 0;       // mean label-smoothed loss per labelled token
  double accuracy = 0;   // argmax == label over labelled tokens
  double lr = 0;
  double grad_norm = 0;  // before clipping
  // The modules' penalties added to the loss (batch mean): the L1 span penalty or ACT's
  // weighted ponder cost (core/train/train_hooks.h).
  double span_penalty = 0;
  // Filled by the modules' hooks (the CLI's --json keys):
  double mean_span = -1;    // adaptive span: mean z over layers and heads (-1: no span)
  double ponder = -1;       // ACT: mean ponder cost N(t) + R(t) over positions (-1: no ACT)
};

class Trainer {
 public:
  // A fresh run: `config` is the preset's; the task sets its tokenizer and vocabulary.
  Trainer(ModelConfig config, TrainOptions options);
  // Continues the run saved in `dir`; throws AtlasError when it is not a checkpoint.
  static Trainer resume(const std::string& dir);

  StepStats step();              // one optimisation step
  // Accuracy and loss on `examples` fresh examples, regularisers off (no update).
  StepStats evaluate(int64_t examples, uint64_t seed) const;
  // Checkpoint (model, optimizer.safetensors, train_state.json) written as one folder and
  // swapped in whole (core/formats/output_folder.h): a failed save leaves dir as it was.
  void save(const std::string& dir) const;

  int64_t steps_done() const { return step_; }
  const TrainOptions& options() const { return o_; }
  TrainOptions& options() { return o_; }
  const ModelConfig& config() const { return config_; }
  const Task& task() const { return task_; }
  const ParamsT<float>& params() const { return params_; }
  Model model() const;  // the current weights as an inference Model

 private:
  Trainer() = default;
  void finish_setup();

  ModelConfig config_;
  TrainOptions o_;
  Task task_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ParamsT<float> params_;
  Adam adam_;
  int64_t step_ = 0;
};

// Throws AtlasError naming the problem when a checkpoint cannot go to `dir` (checked before
// training): dir holds files that are not part of a model folder, or its parent folder is not
// writable. Does not create dir.
void check_writable_dir(const std::string& dir);

}  // namespace atlas::train
