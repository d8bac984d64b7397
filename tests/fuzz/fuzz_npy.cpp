// libFuzzer target for the .npy decoder: any input must either decode or throw
// atlas::AtlasError. Any other exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "core/tensor/error.h"
#include "core/formats/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    atlas::Tensor t = atlas::decode_npy(data, size, "fuzz.npy");
    volatile float sink = 0.0f;
    if (!t.data.empty()) sink = sink + t.data.front() + t.data.back();
    // A decoded tensor must be writable again: this exercises the shape checks of the writer.
    (void)atlas::encode_npy(t, atlas::DType::F32);
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
