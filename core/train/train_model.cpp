// Which model configurations training supports (the differentiable forward itself is in
// train_model_impl.h, instantiated by train_model_float.cpp and train_model_double.cpp).
#include "core/train/train_model.h"

#include <string>

namespace atlas::train {

void check_trainable(const ModelConfig& c) {
  auto reject = [&](const char* what) {
    throw AtlasError("this config enables " + std::string(what) +
                     ", which training does not support yet (its backward is not written, see "
                     "docs/training.md)");
  };
  // The variants a config may not combine at all (the compatibility table) are refused here too.
  validate_config(c, "the training config");
  if (c.shaw() && c.adaptive_span()) reject("Shaw relative positions together with adaptive span");
  if (c.embeddings.patches.enabled()) reject("image input (a ViT; the training tasks are text)");
  if (c.rnn_seq2seq()) reject("the recurrent seq2seq / pointer network");
  if (c.ntm()) reject("the Neural Turing Machine");
  if (c.sagan()) reject("the Self-Attention GAN block");
  if (c.snail()) reject("SNAIL");
  if (c.output == OutputHead::None)
    throw AtlasError("training needs an output head; this config has \"output\": \"none\"");
}

}  // namespace atlas::train
