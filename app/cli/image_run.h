#pragma once
// A model run on an image, shared by `atlas run --image` and `atlas export --image`: a ViT
// gets the image resized and cut into patches (core/input/patch_input.h), a pixel model
// (local2d, bytes vocabulary) one token per grey value or R, G, B (core/input/image_input.h).
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
