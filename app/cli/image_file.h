#pragma once
// Image files for the CLI (atlas sagan, atlas run --image): raster images only. With the GUI
// libraries the CLI decodes PNG, JPEG, BMP, GIF and PPM/PGM/PBM (and WebP, TIFF where Qt has
// the plugin) through an explicit whitelist of Qt's image readers; without them, binary PPM
// (core/input/rgb_image.h).
//
// Vector images are refused by content, not by name: Qt's SVG reader renders <text> with fonts,
// which needs a QGuiApplication, and the headless CLI has none (Qt aborts the process). A PDF or
// PostScript file is refused the same way.
#include <string>
#include <string_view>

#include "core/input/rgb_image.h"

namespace atlas::cli {

// Throws AtlasError naming the file when it is missing, not a regular file (a FIFO or device is
// refused without opening it, core/formats/input_file.h), too large, a vector image, not a
// raster format the CLI reads, or cannot be decoded.
RgbImage load_image(const std::string& path);

// What the content of a file is when it is a vector (or document) format: "an SVG (vector)
// image", ... ; empty for anything else. `name` is the file name (only to tell an SVGZ from
// other gzip data in the message). Exposed for tests.
std::string vector_image_kind(std::string_view content, std::string_view name);

}  // namespace atlas::cli
