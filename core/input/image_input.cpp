// Image input for the pixel models (image_input.h).
#include "core/input/image_input.h"

#include <algorithm>
#include <cmath>

#include "core/model/mechanism_module.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

// The grid of a mechanism reading pixels (a local 2D sparse pattern, mechanism_module.h).
std::optional<PixelGrid> pixel_grid_of(const ModelConfig& c) {
  for (const AttentionMechanismModule* m : mechanisms_for(c))
    if (m->pixel_grid)
      if (std::optional<PixelGrid> grid = m->pixel_grid(c)) return grid;
  return std::nullopt;
}

}  // namespace

bool is_image_model(const ModelConfig& c) {
  return pixel_grid_of(c) && c.tokenizer.kind == TokenizerKind::Bytes && c.vocab_size == 256;
}

ImageInput image_tokens(const ModelConfig& c, const RgbImage& image) {
  if (!is_image_model(c))
    throw AtlasError("model " + c.name + " does not take images: image input needs a ViT (patches, e.g. "
                     "preset:tiny-vit or a Hugging Face ViT directory) or a local2d model with the "
                     "bytes tokenizer (one token per pixel intensity), e.g. preset:tiny-local2d");
  if (image.height < 1 || image.width < 1) throw AtlasError("the image is empty");
  ImageInput in;
  const PixelGrid grid = *pixel_grid_of(c);
  in.channels = grid.channels;
  in.cols = grid.row_bytes / in.channels;
  const int64_t max_rows = std::max<int64_t>(1, c.max_positions / grid.row_bytes);
  const double aspect = double(image.height) / double(image.width);
  in.rows = std::clamp<int64_t>(std::llround(aspect * double(in.cols)), 1, max_rows);
  in.resampled = resize_rgb(image, in.rows, in.cols);
  static const char* kChannel[] = {"R", "G", "B"};
  for (int64_t y = 0; y < in.rows; ++y)
    for (int64_t x = 0; x < in.cols; ++x) {
      const uint8_t* px = &in.resampled.rgb[size_t((y * in.cols + x) * 3)];
      const std::string at = std::to_string(y) + "," + std::to_string(x);
      if (in.channels == 1) {
        const int grey = int(std::lround(0.299 * px[0] + 0.587 * px[1] + 0.114 * px[2]));
        in.tokens.push_back({int32_t(std::clamp(grey, 0, 255)), at});
      } else {
        for (int ch = 0; ch < 3; ++ch) in.tokens.push_back({int32_t(px[ch]), at + kChannel[ch]});
      }
    }
  return in;
}

}  // namespace atlas
