// RGB images: resampling and binary PPM (rgb_image.h).
#include "core/input/rgb_image.h"

#include <algorithm>
#include <sstream>

#include "core/formats/input_file.h"
#include "core/input/image_header.h"
#include "core/tensor/error.h"

namespace atlas {

RgbImage resize_rgb(const RgbImage& in, int64_t height, int64_t width) {
  if (in.height < 1 || in.width < 1 || in.rgb.size() != size_t(in.height * in.width * 3))
    throw AtlasError("image is empty or its pixel buffer does not match its size");
  if (height < 1 || width < 1) throw AtlasError("cannot resize an image to an empty size");
  RgbImage out{height, width, std::vector<uint8_t>(size_t(height * width * 3))};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      const int64_t sy = std::min(in.height - 1, int64_t((y + 0.5) * double(in.height) / double(height)));
      const int64_t sx = std::min(in.width - 1, int64_t((x + 0.5) * double(in.width) / double(width)));
      std::copy_n(&in.rgb[size_t((sy * in.width + sx) * 3)], 3, &out.rgb[size_t((y * width + x) * 3)]);
    }
  return out;
}

RgbImage resize_rgb(const RgbImage& in, int64_t size) { return resize_rgb(in, size, size); }

RgbImage read_ppm(const std::string& path) {
  const std::string bytes = read_input_file(path, InputKind::Image);
  std::istringstream in(bytes);
  std::string magic;
  in >> magic;
  if (magic != "P6")
    throw AtlasError(path + ": not a binary PPM (P6) image; without the GUI libraries only .ppm is read");
  check_image_header(bytes, path);  // the size against the cap and the bytes present
  int64_t fields[3] = {0, 0, 0};
  for (int64_t& f : fields) {
    in >> std::ws;
    while (in.peek() == '#') {  // comment lines
      std::string skip;
      std::getline(in, skip);
      in >> std::ws;
    }
    if (!(in >> f)) throw AtlasError(path + ": truncated PPM header");
  }
  if (fields[0] < 1 || fields[1] < 1 || fields[0] > 16384 || fields[1] > 16384)
    throw AtlasError(path + ": PPM size " + std::to_string(fields[0]) + " x " + std::to_string(fields[1]) +
                     " is outside 1..16384");
  if (fields[2] != 255) throw AtlasError(path + ": only 8-bit PPM (maxval 255) is supported");
  in.get();  // the single whitespace before the pixels
  RgbImage img{fields[1], fields[0], std::vector<uint8_t>(size_t(fields[0] * fields[1] * 3))};
  in.read(reinterpret_cast<char*>(img.rgb.data()), std::streamsize(img.rgb.size()));
  if (in.gcount() != std::streamsize(img.rgb.size())) throw AtlasError(path + ": PPM pixel data is truncated");
  return img;
}

}  // namespace atlas
