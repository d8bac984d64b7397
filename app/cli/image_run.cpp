#include "app/cli/image_run.h"

#include "core/input/image_model_input.h"

namespace atlas::cli {

ImageRun run_on_image(const Model& model, const RgbImage& image, const RunOptions& options) {
  ImageModelInput input = image_model_input(model.config(), image);
  ImageRun run;
  run.description = std::move(input.description);
  run.result = model.forward(input.tokens, {}, options);
  return run;
}

}  // namespace atlas::cli
