#pragma once
// 8-bit RGB images as the engine reads them (the SAGAN block, the pixel models' image input):
// decoded by Qt in the app and the CLI, or from binary PPM here, so core needs no image library.
#include <cstdint>
#include <string>
#include <vector>

namespace atlas {

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // row-major [height, width, 3]
};

// Nearest-neighbour resampling (the source pixel whose centre is nearest) to height x width;
// the one-argument form to size x size. Throws AtlasError for an empty or inconsistent image.
RgbImage resize_rgb(const RgbImage& image, int64_t height, int64_t width);
RgbImage resize_rgb(const RgbImage& image, int64_t size);
// Binary PPM (P6, maxval 255): the image format core reads without Qt. Throws AtlasError
// naming the file and the problem.
RgbImage read_ppm(const std::string& path);

}  // namespace atlas
