// Image headers checked before decoding (core/input/image_header.h): sizes over the pixel cap
// and data cut short are refused from the header alone, before a decoder allocates. The files
// are built byte by byte here (tests/core/image_test_util.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/input/image_header.h"
#include "core/input/rgb_image.h"
#include "core/tensor/error.h"
#include "tests/core/image_test_util.h"

using namespace atlas;
using namespace image_test;
namespace fs = std::filesystem;

TEST_CASE("image headers claiming 100000 x 100000 pixels are refused before decoding",
          "[image]") {
  const std::string over = "claims 100000 x 100000 pixels, over the limit of 67108864 (8192 x 8192)";
  CHECK_THROWS_WITH(check_image_header(png_claiming(100000, 100000), "a.png"),
                    Catch::Contains("a.png: the PNG header " + over));
  std::string jpeg = grey_jpeg(8, 8);
  const size_t sof = jpeg.find("\xFF\xC0");  // FF C0, length, precision, height, width
  REQUIRE(sof != std::string::npos);
  jpeg[sof + 5] = char(0x86), jpeg[sof + 6] = char(0xA0);  // height 34464 ...
  jpeg[sof + 7] = char(0xFF), jpeg[sof + 8] = char(0xFF);  // ... width 65535
  CHECK_THROWS_WITH(check_image_header(jpeg, "a.jpg"),
                    Catch::Contains("the JPEG header claims 65535 x 34464 pixels, over the limit"));
  CHECK_THROWS_WITH(check_image_header("P6\n100000 100000\n255\n" + std::string(30, 'x'), "a.ppm"),
                    Catch::Contains("the PPM header " + over));
  CHECK_THROWS_WITH(check_image_header("GIF89a\xff\xff\xff\xff" + std::string(20, '\0'), "a.gif"),
                    Catch::Contains("claims 65535 x 65535 pixels"));
  CHECK_THROWS_WITH(check_image_header(png_claiming(0, 5), "a.png"),
                    Catch::Contains("a size of 0 x 5 pixels: an empty image"));
  // Within the cap the same files pass: the size is what was refused.
  CHECK(check_image_header(png_claiming(8192, 8192), "a.png").width == 8192);
  const ImageHeader ok = check_image_header(grey_jpeg(16, 8), "a.jpg");
  CHECK((ok.format == "JPEG" && ok.width == 16 && ok.height == 8));
  CHECK(check_image_header("not an image", "x").format.empty());
}

TEST_CASE("a PPM whose pixels are not all in the file is refused before they are allocated",
          "[image]") {
  const fs::path file = fs::temp_directory_path() / ("atlas-ppm-" + std::to_string(::getpid()) + ".ppm");
  // 8000 x 8000 is within the cap (192 MB of pixels) but the file holds 10 bytes of them.
  std::ofstream(file, std::ios::binary) << "P6\n# a comment\n8000 8000\n255\n" << std::string(10, 'x');
  CHECK_THROWS_WITH(read_ppm(file.string()),
                    Catch::Contains("the PPM image is truncated: its 8000 x 8000 pixels need "
                                    "192000000 bytes, 10 follow the header"));
  std::ofstream(file, std::ios::binary) << "P6\n2 1\n255\n" << std::string(6, 'x');
  const RgbImage img = read_ppm(file.string());
  CHECK((img.width == 2 && img.height == 1 && img.rgb == std::vector<uint8_t>(6, 'x')));
  fs::remove(file);
}

TEST_CASE("a JPEG or PNG cut at any byte is refused as truncated", "[image]") {
  for (const std::string& whole : {grey_jpeg(64, 32), png_claiming(3, 2)}) {
    const bool is_jpeg = whole[1] == char(0xD8);
    REQUIRE_NOTHROW(check_image_header(whole, "whole"));
    const size_t signature = is_jpeg ? 3 : 8;  // shorter, no format is recognised at all
    for (size_t n = 0; n < signature; ++n) CHECK(check_image_header(whole.substr(0, n), "cut").format.empty());
    for (size_t n = signature; n < whole.size(); ++n) {
      INFO((is_jpeg ? "JPEG" : "PNG") << " cut to " << n << " of " << whole.size() << " bytes");
      CHECK_THROWS_WITH(check_image_header(whole.substr(0, n), "cut"),
                        Catch::Contains(std::string("cut: the ") + (is_jpeg ? "JPEG" : "PNG") +
                                        " image is truncated"));
    }
  }
}
