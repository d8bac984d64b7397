// Image input for the pixel models (core/input/image_input.h): token ids are the grey values
// 0.299 R + 0.587 G + 0.114 B (rounded) computed here by hand for known pixels, or the raw
// R, G, B values; labels name the pixel; resampling picks the nearest source pixel; the row
// count keeps the aspect ratio and respects max_positions; non-image models are refused.
#include <catch2/catch.hpp>

#include "core/tensor/error.h"
#include "core/input/image_input.h"
#include "core/model/model.h"
#include "core/model/presets.h"

using namespace atlas;

namespace {

// 2 rows x 4 pixels with known colours.
RgbImage known_image() {
  return {2, 4, {255, 0, 0,   0, 255, 0,   0, 0, 255,     255, 255, 255,
                 0, 0, 0,     128, 128, 128, 10, 20, 30,  200, 100, 50}};
}

ModelConfig pixel_model(int64_t image_width, int64_t channels, int64_t max_positions = 1024) {
  ModelConfig c = preset_config("tiny-local2d");
  c.sparse()->image_width = image_width;
  c.sparse()->image_channels = channels;
  c.sparse()->query_w = std::min<int64_t>(c.sparse()->query_w, image_width);
  c.max_positions = max_positions;
  return c;
}

}  // namespace

TEST_CASE("grey image tokens are the luma of each pixel in raster order", "[image]") {
  const ImageInput in = image_tokens(pixel_model(4, 1), known_image());
  CHECK(in.rows == 2);
  CHECK(in.cols == 4);
  // By hand: 76.245, 149.685, 29.07, 255, 0, 128, 18.15, 124.2 -> rounded.
  const std::vector<int32_t> want = {76, 150, 29, 255, 0, 128, 18, 124};
  REQUIRE(in.tokens.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(in.tokens[i].id == want[i]);
  CHECK(in.tokens[0].label == "0,0");
  CHECK(in.tokens[5].label == "1,1");
}

TEST_CASE("RGB image tokens are three channel values per pixel", "[image]") {
  const ImageInput in = image_tokens(pixel_model(12, 3), known_image());
  CHECK(in.cols == 4);
  REQUIRE(in.tokens.size() == 24);
  CHECK(in.tokens[0].id == 255);
  CHECK(in.tokens[1].id == 0);
  CHECK(in.tokens[4].id == 255);  // pixel (0,1) G
  CHECK(in.tokens[4].label == "0,1G");
  CHECK(in.tokens[23].id == 50);  // pixel (1,3) B
  CHECK(in.tokens[23].label == "1,3B");
}

TEST_CASE("images are resampled to the model's width by the nearest pixel, rows capped", "[image]") {
  // 4 x 8 source, each pixel grey value 10 y + x (R = G = B): 4 columns take source columns
  // 1, 3, 5, 7 and 2 rows take source rows 1, 3.
  RgbImage big{4, 8, {}};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x)
      for (int ch = 0; ch < 3; ++ch) big.rgb.push_back(uint8_t(10 * y + x));
  const ImageInput in = image_tokens(pixel_model(4, 1), big);
  REQUIRE(in.rows == 2);
  const std::vector<int32_t> want = {11, 13, 15, 17, 31, 33, 35, 37};
  for (size_t i = 0; i < want.size(); ++i) CHECK(in.tokens[i].id == want[i]);
  // A tall image is cut to the rows max_positions holds (16 / 4 = 4).
  RgbImage tall{100, 4, std::vector<uint8_t>(100 * 4 * 3, 7)};
  CHECK(image_tokens(pixel_model(4, 1, 16), tall).rows == 4);
}

TEST_CASE("image input is refused by models that do not take images, and bad channel counts", "[image]") {
  CHECK_THROWS_WITH(image_tokens(preset_config("tiny-encoder"), known_image()), Catch::Contains("does not take images"));
  CHECK_THROWS_WITH(image_tokens(pixel_model(4, 1), RgbImage{}), Catch::Contains("empty"));
  ModelConfig c = pixel_model(12, 3);
  c.sparse()->image_channels = 2;
  CHECK_THROWS_WITH(validate_config(c, "test"), Catch::Contains("image_channels must be 1"));
  c = pixel_model(10, 1);
  c.sparse()->image_channels = 3;
  CHECK_THROWS_WITH(validate_config(c, "test"), Catch::Contains("multiple of sparse.image_channels"));
}

TEST_CASE("a pixel model runs on image tokens, one attention row per pixel", "[image]") {
  const ModelConfig c = preset_config("tiny-local2d");
  const Model model(c, init_params(c, 1));
  const ImageInput in = image_tokens(c, known_image());
  const RunResult r = model.forward(in.tokens, {}, {});
  const TracedArray* a = r.trace.find("decoder.layer0.self_attn");
  REQUIRE(a);
  CHECK(a->tensor.shape[1] == int64_t(in.tokens.size()));
  CHECK(r.trace.source_tokens[3].label == in.tokens[3].label);
}
