// Which model configurations training supports (the differentiable forward itself is in
// train_model_impl.h, instantiated by train_model_float.cpp and train_model_double.cpp).
#include "core/train/train_model.h"

#include <string>

#include "core/model/mechanism_module.h"
#include "core/model/stack_kind_module.h"

namespace atlas::train {

void check_trainable(const ModelConfig& c) {
  auto reject = [&](const char* what) {
    throw AtlasError("this config enables " + std::string(what) +
                     ", which training does not support yet (its backward is not written, see "
                     "docs/training.md)");
  };
  // The variants a config may not combine at all (the compatibility table) are refused here too.
  validate_config(c, "the training config");
  for (const AttentionMechanismModule* m : mechanisms_for(c))  // e.g. Shaw with adaptive span
    if (const char* what = m->untrainable ? m->untrainable(c) : nullptr) reject(what);
  if (c.embeddings.patches.enabled()) reject("image input (a ViT; the training tasks are text)");
  if (const HostModelKind* host = host_model_kind(c)) reject(host->untrainable);
  if (c.output == OutputHead::None)
    throw AtlasError("training needs an output head; this config has \"output\": \"none\"");
}

}  // namespace atlas::train
