// NFC for the one tokenizer that asks for it. Text made only of characters that no step of
// NFC can change (below U+0300, CJK ideographs, emoji) is returned as it is; anything else is
// refused rather than tokenized differently from the checkpoint's own tokenizer.
#include "core/tokenizers/unicode_nfc.h"

#include <cstdio>

#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas {

std::string to_nfc(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    const char32_t cp = d.code_point;
    const bool stable = cp < 0x300 || (cp >= 0x4E00 && cp <= 0x9FFF) || cp >= 0x1F000;
    if (!stable) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
      throw AtlasError(std::string("tokenizer: NFC normalization of ") + buf + " (byte " +
                       std::to_string(pos) + ") is not implemented");
    }
    pos += d.length == 0 ? 1 : d.length;
  }
  return std::string(text);
}

}  // namespace atlas
