// libFuzzer target for the GGUF reader: any input must either parse or throw atlas::AtlasError,
// and every tensor of a parsed file must either dequantize or be refused with AtlasError. Any
// other exception, crash, read outside the input or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "core/formats/gguf.h"
#include "core/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const atlas::GgufFile f = atlas::parse_gguf(data, size, "fuzz.gguf");
    volatile float sink = 0.0f;  // touch the results so nothing is optimised away
    for (const atlas::GgufTensorInfo& t : f.tensors()) {
      try {
        const atlas::Tensor x = f.read_tensor(t.name);
        if (!x.data.empty()) sink = sink + x.data.front() + x.data.back();
      } catch (const atlas::AtlasError&) {}
    }
    for (const atlas::GgufKeyValue& kv : f.metadata()) sink = sink + float(kv.key.size());
  } catch (const atlas::AtlasError&) {}
  return 0;
}
