#pragma once
// Image input of patch-embedding models (ViT). Preprocessing follows Hugging Face's
// ViTImageProcessor: resize to image_size x image_size ignoring the aspect ratio with PIL's
// BILINEAR filter (a triangle filter widened by the downscale factor, so shrinking averages
// rather than skips pixels; each pass rounds to 8 bits as PIL does), then x * rescale,
// then (x - mean) / std per channel. The image is cut into size x size patches in raster
// order; each becomes one token whose TokenInfo::patch holds its pixels in the
// (channel, row, column) order of the Conv2d weight.
#include <vector>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/input/rgb_image.h"
#include "core/model/trace.h"

namespace atlas {

struct PatchInput {
  std::vector<TokenInfo> tokens;  // "[CLS]" (when the model has one), then "r,c" per patch
  RgbImage resized;               // image_size x image_size, what the model sees
  int64_t grid = 0;               // patches per side
};

bool is_patch_model(const ModelConfig& c);
// PIL's Image.resize(..., BILINEAR) on an 8-bit RGB image.
RgbImage resize_bilinear(const RgbImage& image, int64_t height, int64_t width);
// Throws AtlasError when `c` is not a patch model or the image is empty.
PatchInput patch_input(const ModelConfig& c, const RgbImage& image);
// The inputs of the patch embedding, so that a backend computes it with its own linear op:
// x = pixels embed.patch.weight^T + embed.patch.bias + cls_fix, where pixels [L, features]
// holds each patch's values (zeros on the [CLS] row) and cls_fix [L, d] is embed.cls -
// embed.patch.bias on the [CLS] row, zero elsewhere (empty without [CLS]). Throws AtlasError
// naming the token when the tokens do not match the model's patch layout.
struct PatchMatrices {
  Tensor pixels;
  Tensor cls_fix;
};
PatchMatrices patch_matrices(const ModelConfig& c, const ParamStore& params,
                             const std::vector<TokenInfo>& tokens);

}  // namespace atlas
