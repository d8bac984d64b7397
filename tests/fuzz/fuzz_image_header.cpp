// libFuzzer target for image headers (core/input/image_header.h check_image_header): any input
// must either pass, giving a size within the pixel cap, or throw atlas::AtlasError; it never
// reads past the end of the bytes. Any other exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/input/image_header.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes, so ASan sees any read past the end.
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const atlas::ImageHeader h = atlas::check_image_header(bytes, "fuzz");
    if (!h.format.empty() &&
        (h.width < 1 || h.height < 1 || h.width * h.height > atlas::kMaxImagePixels))
      std::abort();
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
