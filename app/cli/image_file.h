#pragma once
// Image files for the CLI (atlas sagan, atlas run --image): PNG, JPEG and the other formats Qt
// decodes when the CLI is built with the GUI libraries, else binary PPM (core/input/rgb_image.h).
#include <string>

#include "core/input/rgb_image.h"

namespace atlas::cli {

// Throws AtlasError naming the file when it is missing or cannot be decoded.
RgbImage load_image(const std::string& path);

}  // namespace atlas::cli
