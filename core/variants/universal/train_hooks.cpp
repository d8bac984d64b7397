// ACT's hooks into the training loop (core/train/train_hooks.h): the ponder cost (train_act.h),
// weighted by the run's ponder_weight, is added to each example's loss; a step reports the mean
// ponder cost N(t) + R(t) per position.
#include <memory>

#include "core/tensor/error.h"
#include "core/train/train_hooks.h"
#include "core/variants/universal/train_act.h"

namespace atlas::train {

namespace {

bool trains_act(const ModelConfig& c) { return c.universal() && c.universal()->act; }

void check_ponder_weight(const ModelConfig&, const TrainOptions& o) {
  if (!(o.ponder_weight >= 0.0 && o.ponder_weight <= 100.0))
    throw AtlasError("the ponder-cost weight must be in [0, 100]");
}

class PonderStep : public TrainStepHook {
 public:
  explicit PonderStep(double weight) : weight_(weight) {}
  double example_penalty(Tape<float>& tape, const ForwardResult<float>& r,
                         double seed_weight) override {
    if (r.act_steps.empty()) return 0.0;
    const double cost = ponder_cost<float>(tape, r, weight_, seed_weight);
    sum_ += weight_ > 0 ? cost / weight_ : ponder_cost<float>(tape, r, 1.0, 0.0);
    ++examples_;
    return cost;
  }
  void report(StepStats& stats) const override {
    stats.ponder = examples_ ? sum_ / double(examples_) : -1.0;
  }

 private:
  double weight_;
  double sum_ = 0;  // the unweighted ponder cost of each example
  int64_t examples_ = 0;
};

std::unique_ptr<TrainStepHook> begin_ponder_step(const ModelConfig&, const TrainOptions& o) {
  return std::make_unique<PonderStep>(o.ponder_weight);
}

const TrainHooks kActTrainHooks{"universal", trains_act, check_ponder_weight, nullptr, nullptr,
                                begin_ponder_step};

}  // namespace

namespace variants {
std::vector<const TrainHooks*> universal_train_hooks() { return {&kActTrainHooks}; }
}  // namespace variants

}  // namespace atlas::train
