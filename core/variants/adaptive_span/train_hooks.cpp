// Adaptive span's hooks into the training loop (core/train/train_hooks.h), as the reference
// trains z (facebookresearch/adaptive-span): the learned z moves S times faster (it is learned
// as z / S there), is clamped into [0, S] after every step, and the L1 penalty (span_z.h) is
// added to each example's loss; a step reports the mean span over layers and heads.
#include <memory>

#include "core/model/params.h"
#include "core/train/train_hooks.h"
#include "core/variants/adaptive_span/span_z.h"
#include "core/variants/adaptive_span/train_span.h"

namespace atlas::train {

namespace {

bool trains_span(const ModelConfig& c) { return c.adaptive_span() != nullptr; }

std::vector<std::pair<std::string, double>> span_lr_multipliers(const ModelConfig& c) {
  std::vector<std::pair<std::string, double>> out;
  for (const ParamSpec& spec : param_specs(c))
    if (is_span_z_param(spec.name)) out.emplace_back(spec.name, double(c.adaptive_span()->max_span));
  return out;
}

void clamp_learned_spans(const ModelConfig& c, ParamsT<float>& params) {
  const int64_t max_span = c.adaptive_span()->max_span;
  for (auto& [name, p] : params)
    if (is_span_z_param(name)) p = p.unaryExpr([max_span](float z) { return clamp_span_z(z, max_span); });
}

class SpanStep : public TrainStepHook {
 public:
  explicit SpanStep(const AdaptiveSpanConfig& span) : span_(span) {}
  double example_penalty(Tape<float>& tape, const ForwardResult<float>& r,
                         double seed_weight) override {
    if (r.span_z_nodes.empty()) return 0.0;
    for (int id : r.span_z_nodes)
      for (double z : head_spans(tape.value(id), span_.max_span)) {
        sum_ += z;
        ++heads_;
      }
    return span_penalty<float>(tape, span_, r.span_z_nodes, seed_weight);
  }
  void report(StepStats& stats) const override {
    stats.mean_span = heads_ ? sum_ / double(heads_) : -1.0;
  }

 private:
  AdaptiveSpanConfig span_;
  double sum_ = 0;  // the heads' spans over the batch's examples and layers
  int64_t heads_ = 0;
};

std::unique_ptr<TrainStepHook> begin_span_step(const ModelConfig& c, const TrainOptions&) {
  return std::make_unique<SpanStep>(*c.adaptive_span());
}

const TrainHooks kAdaptiveSpanTrainHooks{"adaptive_span", trains_span, nullptr,
                                         span_lr_multipliers, clamp_learned_spans,
                                         begin_span_step};

}  // namespace

namespace variants {
std::vector<const TrainHooks*> adaptive_span_train_hooks() { return {&kAdaptiveSpanTrainHooks}; }
}  // namespace variants

}  // namespace atlas::train
