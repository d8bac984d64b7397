// libFuzzer target for the safetensors parser: any input must either parse or throw
// atlas::AtlasError. Any other exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "core/tensor/error.h"
#include "core/formats/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    atlas::SafetensorsFile f = atlas::parse_safetensors(data, size, "fuzz.safetensors");
    // Touch the results so conversions cannot be optimised away.
    volatile float sink = 0.0f;
    for (const auto& [name, t] : f.tensors)
      if (!t.data.empty()) sink = sink + t.data.front() + t.data.back();
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
