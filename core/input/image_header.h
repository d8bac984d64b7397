#pragma once
// What an image file's header claims, checked before any decoder allocates for it: the width
// and height against a pixel cap, and the bytes the format needs against the bytes present.
// PNG, JPEG, GIF, BMP and binary PPM are read here without an image library, so the CLI with or
// without Qt (and a decoder that would allocate first and fail later) refuses the same files
// with the same message. A JPEG or PNG cut short (no end-of-image marker, no IEND chunk) is
// refused too: libjpeg would decode the part present and fill the rest with grey.
#include <cstdint>
#include <string>
#include <string_view>

namespace atlas {

// 8192 x 8192: the engine resamples every image to its model's size (at most a few hundred
// pixels a side), so a larger one only costs memory (192 MB of RGB at the cap).
constexpr int64_t kMaxImagePixels = int64_t(8192) * 8192;

struct ImageHeader {
  std::string format;  // "PNG", "JPEG", "GIF", "BMP", "PPM"; empty when not one of these
  int64_t width = 0, height = 0;
};

// The header of `content` when it is one of the formats above, after checking it: throws
// AtlasError("<origin>: ...") for a size of zero or over kMaxImagePixels, a header or pixel
// data that runs past the end of the file, or a JPEG/PNG without its end. Returns an empty
// format for anything else (left to the caller's decoder).
ImageHeader check_image_header(std::string_view content, const std::string& origin);

// Throws AtlasError naming `origin` when width x height is zero, negative or over the cap.
void check_image_size(int64_t width, int64_t height, const std::string& format,
                      const std::string& origin);

}  // namespace atlas
