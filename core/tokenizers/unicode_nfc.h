#pragma once
// Unicode Normalization Form C, for tokenizer.json's NFC normalizer (Qwen2).
#include <string>
#include <string_view>

namespace atlas {

// The NFC form of valid UTF-8 text. Throws AtlasError for text it cannot normalize.
std::string to_nfc(std::string_view text);

}  // namespace atlas
