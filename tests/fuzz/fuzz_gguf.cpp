// libFuzzer target for the GGUF reader: any input must either parse or throw atlas::AtlasError,
// and every tensor of a parsed file must either dequantize or be refused with AtlasError. Any
// other exception, crash, read outside the input or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "core/formats/gguf.h"
#include "core/formats/gguf_tokenizer.h"
#include "core/tokenizers/tokenizer.h"
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
    // The tokenizer the metadata describes (core/formats/gguf_tokenizer.h): refused with an
    // AtlasError, or one whose ids stay inside its vocab.
    try {
      const auto tok = atlas::make_tokenizer(atlas::tokenizer_from_gguf(f));
      for (const atlas::TokenInfo& t : tok->encode("Hello, world! It's 2026 \xC3\xA9 \xE4\xB8\xAD")) {
        if (t.id < 0 || t.id >= tok->vocab_size()) std::abort();
        sink = sink + float(tok->label(t.id).size());
      }
    } catch (const atlas::AtlasError&) {}
  } catch (const atlas::AtlasError&) {}
  return 0;
}
