#pragma once
// A model run on an image, shared by `atlas run --image` and `atlas export --image`: the
// image's tokens (core/input/image_model_input.h) run through the model.
#include <string>

#include "core/input/rgb_image.h"
#include "core/model/model.h"

namespace atlas::cli {

struct ImageRun {
  RunResult result;
  std::string description;  // "256 x 256 pixels, resized to 32 x 32, 16 patches of 8 + [CLS]"
};

// Throws AtlasError when the model takes text, not images (core/input/image_input.h says so).
ImageRun run_on_image(const Model& model, const RgbImage& image, const RunOptions& options);

}  // namespace atlas::cli
