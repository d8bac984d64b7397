#include "core/train/train_hooks.h"

namespace atlas::train {

std::vector<const TrainHooks*> train_hooks_for(const ModelConfig& c) {
  static const std::vector<const TrainHooks*> modules = generated_variant_train_hooks();
  std::vector<const TrainHooks*> used;
  for (const TrainHooks* m : modules)
    if (m->used_by(c)) used.push_back(m);
  return used;
}

}  // namespace atlas::train
