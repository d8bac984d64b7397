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
  if (c.shaw.enabled && c.adaptive_span.enabled) reject("Shaw relative positions together with adaptive span");
  if (c.xl.enabled && (c.shaw.enabled || c.adaptive_span.enabled || c.sparse.enabled() ||
                       c.performer.enabled || c.lsh.reversible || c.universal.enabled ||
                       c.score.function != ScoreFunction::ScaledDot))
    reject("Transformer-XL together with another attention variant");
  if (c.universal.enabled && c.architecture == Architecture::EncoderDecoder)
    reject("a Universal Transformer encoder-decoder (the engine runs UT encoders or decoders)");
  if (c.universal.enabled && c.adaptive_span.enabled)
    reject("adaptive span inside the Universal Transformer block");
  if (c.sparse.enabled() && (c.adaptive_span.enabled || c.shaw.enabled))
    reject("a sparse pattern together with adaptive span or Shaw positions");
  if (c.lsh.enabled && (c.sparse.enabled() || c.shaw.enabled || c.adaptive_span.enabled ||
                        c.performer.enabled || c.score.function != ScoreFunction::ScaledDot))
    reject("LSH attention together with another attention variant");
  if (c.lsh.reversible && c.universal.enabled) reject("reversible layers in a Universal Transformer");
  // The span penalty reads each layer's z from the tape, which a recomputed layer does not keep.
  if (c.lsh.reversible && c.adaptive_span.enabled) reject("adaptive span inside reversible layers");
  if (c.performer.enabled && (c.sparse.enabled() || c.shaw.enabled || c.adaptive_span.enabled ||
                              c.score.function != ScoreFunction::ScaledDot))
    reject("Performer attention together with a sparse pattern, Shaw, adaptive span or a score function");
  if (c.embeddings.patches.enabled()) reject("image input (a ViT; the training tasks are text)");
  if (c.rnn_seq2seq.enabled) reject("the recurrent seq2seq / pointer network");
  if (c.ntm.enabled) reject("the Neural Turing Machine");
  if (c.sagan.enabled) reject("the Self-Attention GAN block");
  if (c.snail.enabled) reject("SNAIL");
  if (c.score.function != ScoreFunction::ScaledDot &&
      (c.sparse.enabled() || c.shaw.enabled || c.adaptive_span.enabled))
    reject("a score function together with a sparse pattern, Shaw positions or adaptive span");
  if (c.output == OutputHead::None)
    throw AtlasError("training needs an output head; this config has \"output\": \"none\"");
}

}  // namespace atlas::train
