// atlas sagan: a Self-Attention GAN block (core/variants/sagan/sagan.h) on an image file or the built-in test
// card; prints where one query location attends and dumps the traced arrays.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>

#include "app/cli/commands.h"
#include "core/formats/dump.h"
#include "core/tensor/error.h"
#include "app/cli/image_file.h"
#include "core/analysis/weight_check.h"
#include "core/formats/model_io.h"
#include "core/variants/sagan/sagan.h"
#include "core/variants/sagan/sagan_arrays.h"

namespace atlas::cli {

namespace {

const char* kSaganUsage =
    "usage: atlas sagan [MODEL] [--image FILE] [--query ROW,COL] [--seed N] [--dump DIR]\n"
    "  Runs a SAGAN model (default preset:sagan-small) on FILE resampled to its\n"
    "  sagan.image_size (PNG/JPEG/... when built with the GUI, else binary PPM), or on the\n"
    "  built-in test card, and prints the most attended key locations of one query.\n"
    "  --query ROW,COL  query location (default: the centre)\n"
    "  --dump DIR       sagan.image, sagan.features, sagan.attention [1, HW, HWk], sagan.gamma,\n"
    "                   sagan.output, output\n";


}  // namespace

int cmd_sagan(const std::vector<std::string>& args) {
  if (wants_help(args, kSaganUsage)) return 0;
  Args a(args, {{"--image", "--query", "--seed", "--dump"}, {}});
  // A folder --dump may not write is refused before the (possibly long) run.
  if (auto dir = a.get("--dump")) check_dump_destination(*dir);
  if (a.positionals().size() > 1) throw AtlasError("sagan takes at most one MODEL (see atlas sagan --help)");
  // The image first: a file that is not a raster image is refused before a model is built.
  std::optional<RgbImage> file_image;
  if (auto path = a.get("--image")) file_image = load_image(*path);
  LoadOptions load;
  if (a.has("--seed")) load.seed = static_cast<uint64_t>(a.get_int("--seed", 0, 0, INT64_MAX));
  Model model = load_model(a.positionals().empty() ? "preset:sagan-small" : a.positionals()[0], load);
  for (const auto& w : model.warnings()) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  for (const auto& w : weight_warnings(model)) std::fprintf(stderr, "warning: %s\n", printable(w).c_str());
  const ModelConfig& c = model.config();
  if (!c.sagan()) throw AtlasError(printable(c.name) + " is not a SAGAN model (sagan.enabled is false)");
  const int64_t S = c.sagan()->image_size;
  const RgbImage image = file_image ? *file_image : sagan_synthetic_image(S);
  int64_t row = S / 2, col = S / 2;
  if (auto q = a.get("--query")) {  // a location of the S x S feature map
    const std::vector<long long> rc = parse_int_list("--query", *q, {"ROW", "COL"}, 0, S - 1);
    row = rc[0];
    col = rc[1];
  }
  RunOptions options;
  const RunResult result = sagan_forward(c, model.params(), image, options);
  for (const auto& w : output_warnings(result)) std::fprintf(stderr, "warning: %s\n", w.c_str());
  const Tensor& att = result.trace.find(sagan_arrays::kAttention)->tensor;
  const int64_t Nk = att.shape[2], kw = c.sagan()->pool_keys ? S / 2 : S;
  std::printf("model: %s\nimage: %s, %lld x %lld, resampled to %lld x %lld\n", printable(c.name).c_str(),
              a.has("--image") ? printable(a.require("--image")).c_str() : "built-in test card",
              static_cast<long long>(image.height), static_cast<long long>(image.width),
              static_cast<long long>(S), static_cast<long long>(S));
  const float* rowp = att.data.data() + (row * S + col) * Nk;
  std::vector<int64_t> order(static_cast<size_t>(Nk));
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + long(top), order.end(),
                    [&](int64_t x, int64_t y) { return rowp[x] > rowp[y]; });
  std::printf("query (%lld,%lld) attends most to key locations%s:", static_cast<long long>(row),
              static_cast<long long>(col), c.sagan()->pool_keys ? " (2x2-pooled grid)" : "");
  for (size_t i = 0; i < top; ++i)
    std::printf(" (%lld,%lld) %.4f", static_cast<long long>(order[i] / kw), static_cast<long long>(order[i] % kw),
                double(rowp[order[i]]));
  std::printf("\n");
  for (const auto& arr : result.trace.arrays)
    std::printf("  %-20s %s\n", arr.name.c_str(), shape_str(arr.tensor.shape).c_str());
  if (auto dir = a.get("--dump")) {
    write_dump(*dir, model, result);
    std::printf("dumped %zu arrays to %s\n", result.trace.arrays.size(), printable(*dir).c_str());
  }
  return 0;
}

}  // namespace atlas::cli
