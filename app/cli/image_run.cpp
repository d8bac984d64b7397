#include "app/cli/image_run.h"

#include "core/input/image_input.h"
#include "core/input/patch_input.h"

namespace atlas::cli {

ImageRun run_on_image(const Model& model, const RgbImage& image, const RunOptions& options) {
  const ModelConfig& c = model.config();
  const std::string size = std::to_string(image.height) + " x " + std::to_string(image.width) + " pixels";
  ImageRun run;
  if (is_patch_model(c)) {
    const PatchInput input = patch_input(c, image);
    const PatchOptions& p = c.embeddings.patches;
    run.description = size + ", resized to " + std::to_string(p.image_size) + " x " +
                      std::to_string(p.image_size) + ", " + std::to_string(p.patch_count()) +
                      " patches of " + std::to_string(p.size) + (p.cls ? " + [CLS]" : "");
    run.result = model.forward(input.tokens, {}, options);
    return run;
  }
  const ImageInput input = image_tokens(c, image);  // refuses models that take text
  run.description = size + ", resampled to " + std::to_string(input.rows) + " x " +
                    std::to_string(input.cols) + " (" +
                    (input.channels == 3 ? "R, G, B per pixel" : "grey") + ", " +
                    std::to_string(input.tokens.size()) + " tokens)";
  run.result = model.forward(input.tokens, {}, options);
  return run;
}

}  // namespace atlas::cli
