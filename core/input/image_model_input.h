#pragma once
// An image as the tokens of the model that reads it, shared by `atlas run --image`, `atlas
// export --image` and Python's Model.run(image): a ViT gets the image resized and cut into
// patches (core/input/patch_input.h), a pixel model (local2d, bytes vocabulary) one token per
// grey value or R, G, B (core/input/image_input.h).
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/input/rgb_image.h"
#include "core/model/trace.h"

namespace atlas {

struct ImageModelInput {
  std::vector<TokenInfo> tokens;
  std::string description;  // "256 x 256 pixels, resized to 32 x 32, 16 patches of 8 + [CLS]"
};

// Throws AtlasError when the model takes text, not images, or the image is empty.
ImageModelInput image_model_input(const ModelConfig& c, const RgbImage& image);

}  // namespace atlas
