// libFuzzer target for SentencePiece's tokenizer.model reader
// (core/formats/hf/sentencepiece_model.cpp): any input must parse or throw atlas::AtlasError.
// A parsed model that maps to a tokenizer (tokenizer_from_sentencepiece) must give ids inside
// its vocab on a fixed text. Any other exception, a crash or a sanitizer report is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/formats/hf/sentencepiece_model.h"
#include "core/tensor/error.h"
#include "core/tokenizers/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const atlas::SentencePieceModel m = atlas::parse_sentencepiece_model(bytes, "fuzz.model");
    if (m.scores.size() != m.pieces.size() || m.types.size() != m.pieces.size()) std::abort();
    const auto tok = atlas::make_tokenizer(atlas::tokenizer_from_sentencepiece(m, "fuzz.model", true, true));
    for (const auto& t : tok->encode("Hello, world! \xC3\xA9t\xC3\xA9 \xE4\xB8\xAD</s>")) {
      if (t.id < 0 || t.id >= tok->vocab_size()) {
        std::fprintf(stderr, "token id %d outside the vocab of %lld\n", t.id,
                     static_cast<long long>(tok->vocab_size()));
        std::abort();
      }
      (void)tok->label(t.id);
    }
  } catch (const atlas::AtlasError&) {
  }
  return 0;
}
