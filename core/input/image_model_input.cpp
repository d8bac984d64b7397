#include "core/input/image_model_input.h"

#include "core/input/image_input.h"
#include "core/input/patch_input.h"

namespace atlas {

ImageModelInput image_model_input(const ModelConfig& c, const RgbImage& image) {
  const std::string size = std::to_string(image.height) + " x " + std::to_string(image.width) + " pixels";
  ImageModelInput out;
  if (is_patch_model(c)) {
    PatchInput input = patch_input(c, image);
    const PatchOptions& p = c.embeddings.patches;
    out.description = size + ", resized to " + std::to_string(p.image_size) + " x " +
                      std::to_string(p.image_size) + ", " + std::to_string(p.patch_count()) +
                      " patches of " + std::to_string(p.size) + (p.cls ? " + [CLS]" : "");
    out.tokens = std::move(input.tokens);
    return out;
  }
  ImageInput input = image_tokens(c, image);  // refuses models that take text
  out.description = size + ", resampled to " + std::to_string(input.rows) + " x " + std::to_string(input.cols) +
                    " (" + (input.channels == 3 ? "R, G, B per pixel" : "grey") + ", " +
                    std::to_string(input.tokens.size()) + " tokens)";
  out.tokens = std::move(input.tokens);
  return out;
}

}  // namespace atlas
