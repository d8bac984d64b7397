// Performer's hook into the training loop (core/train/train_hooks.h): attention dropout is
// refused before the first step, as the tape op would refuse it (FAVOR+ never forms the
// probabilities it would drop).
#include "core/tensor/error.h"
#include "core/train/train_hooks.h"
#include "core/variants/performer/train_performer.h"

namespace atlas::train {

namespace {

bool trains_performer(const ModelConfig& c) { return c.performer() != nullptr; }

void refuse_attention_dropout(const ModelConfig&, const TrainOptions& o) {
  if (o.reg.attention_dropout > 0) throw AtlasError(performer_attention_dropout_refusal());
}

const TrainHooks kPerformerTrainHooks{"performer", trains_performer, refuse_attention_dropout,
                                      nullptr, nullptr, nullptr};

}  // namespace

namespace variants {
std::vector<const TrainHooks*> performer_train_hooks() { return {&kPerformerTrainHooks}; }
}  // namespace variants

}  // namespace atlas::train
