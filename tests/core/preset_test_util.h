#pragma once
// Every preset as a test runs it: presets bigger than a few million parameters are shrunk to
// d 64 / 2 layers with every other option kept, so each composition is covered quickly; and
// each model's own kind of input (text, a target for encoder-decoders, an image for ViTs).
#include <algorithm>
#include <string>

#include "core/input/patch_input.h"
#include "core/input/rgb_image.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"

namespace atlas::preset_test {

inline ModelConfig small_preset_config(const std::string& preset) {
  ModelConfig c = preset_config(preset);
  if (parameter_count(c) > 3'000'000) {
    c.d_model = 64;
    if (c.attention.kv_heads > 0)  // keep grouped-query heads grouped: 4 / group size, at least 1
      c.attention.kv_heads = std::max<int64_t>(1, 4 / (c.n_heads / c.attention.kv_heads));
    c.n_heads = 4;
    c.d_ff = 128;
    c.n_layers = std::min<int64_t>(c.n_layers, 2);
    if (c.n_decoder_layers > 0) c.n_decoder_layers = std::min<int64_t>(c.n_decoder_layers, 2);
  }
  return c;
}

// A 40 x 40 colour gradient, for image models.
inline RgbImage gradient_image() {
  RgbImage image{40, 40, {}};
  for (int64_t i = 0; i < 40 * 40; ++i)
    for (int64_t ch = 0; ch < 3; ++ch) image.rgb.push_back(uint8_t((i * (ch + 3)) % 256));
  return image;
}

// Runs `model` on `text` (and a target for encoder-decoders), or on the gradient image.
inline RunResult run_preset_input(const Model& model, const std::string& text,
                                  const RunOptions& options) {
  const ModelConfig& c = model.config();
  if (is_patch_model(c)) return model.forward(patch_input(c, gradient_image()).tokens, {}, options);
  const std::string target = c.architecture == Architecture::EncoderDecoder ? "Hi there" : "";
  return model.run(text, target, options);
}

}  // namespace atlas::preset_test
