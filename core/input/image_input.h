#pragma once
// Image input for the pixel models (Image Transformer local 2D attention, seed 000): an image
// becomes one token per intensity, its value 0..255 the token id, in raster order with
// sparse.image_width positions per row. With sparse.image_channels = 3 each pixel gives three
// positions R, G, B (the paper's CIFAR-10 layout); with 1, one grey value
// (0.299 R + 0.587 G + 0.114 B, rounded). The image is resampled (nearest pixel) to
// image_width / channels pixels across, keeping its aspect ratio, and to at most as many rows
// as max_positions allows.
#include <vector>

#include "core/config/config.h"
#include "core/input/rgb_image.h"
#include "core/model/trace.h"

namespace atlas {

struct ImageInput {
  std::vector<TokenInfo> tokens;  // labels "y,x" (grey) or "y,xR" / "y,xG" / "y,xB"
  int64_t rows = 0, cols = 0;     // the resampled image, in pixels
  int64_t channels = 1;
  RgbImage resampled;             // what the tokens show, [rows, cols]
};

// Local 2D models with a 256-entry byte vocabulary (the models whose positions are pixels).
bool is_image_model(const ModelConfig& c);
// Throws AtlasError naming the problem when `c` is not an image model or the image is empty.
ImageInput image_tokens(const ModelConfig& c, const RgbImage& image);

}  // namespace atlas
