#pragma once
// What a variant module adds to the training loop (core/train/train_loop.cpp) beyond its tape
// ops: options it refuses, learning-rate multipliers of its parameters, a projection of its
// parameters after each optimiser step (a clamp), a penalty added to each example's loss and
// the statistics a step reports. A module brings hooks by a file train_hooks.cpp in its folder
// (core/variants/<m>/) defining
//   std::vector<const TrainHooks*> atlas::train::variants::<m>_train_hooks();
// which cmake/module_registry.cmake lists (in folder-name order), so the loop names no variant
// and no parameter.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/train/train_loop.h"
#include "core/train/train_model.h"
#include "core/train/train_tape.h"

namespace atlas::train {

// One optimisation step's share of a module: the penalty of each example of the batch, then
// what the step reports.
class TrainStepHook {
 public:
  virtual ~TrainStepHook() = default;
  // After an example's forward, before its backward: its penalty, whose gradient times
  // seed_weight (labelled tokens per example: the loss's units) is seeded on `tape`. The loop
  // adds the batch mean of the returned values to the step's penalty.
  virtual double example_penalty(Tape<float>& tape, const ForwardResult<float>& r,
                                 double seed_weight) = 0;
  // After the step: the module's fields of the step's statistics.
  virtual void report(StepStats& stats) const = 0;
};

struct TrainHooks {
  const char* name;                       // the module
  bool (*used_by)(const ModelConfig& c);  // whether a config trains with these hooks
  // Throws AtlasError naming what the module cannot train with (null: nothing refused).
  void (*check_options)(const ModelConfig& c, const TrainOptions& o);
  // Parameters whose Adam step is scaled, and by what (null: none).
  std::vector<std::pair<std::string, double>> (*lr_multipliers)(const ModelConfig& c);
  // After each optimiser step, outside the graph (null: nothing).
  void (*after_step)(const ModelConfig& c, ParamsT<float>& params);
  // A fresh accumulator for one step (null: no penalty and no statistics).
  std::unique_ptr<TrainStepHook> (*begin_step)(const ModelConfig& c, const TrainOptions& o);
};

// The hooks a config trains with, in folder-name order.
std::vector<const TrainHooks*> train_hooks_for(const ModelConfig& c);

// Every module's hooks (generated from the folders of core/variants/).
std::vector<const TrainHooks*> generated_variant_train_hooks();

}  // namespace atlas::train
