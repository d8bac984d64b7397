#pragma once
// The character classes the pre-tokenizers split on (GPT-2's regex and the tokenizer.json
// ones): whitespace, letters (\p{L}), numbers (\p{N}) and everything else.
#include <cstdint>

#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/utf8.h"

namespace atlas {

enum class CharClass : uint8_t { Space, Letter, Number, Other };

inline CharClass classify(char32_t cp) {
  if (utf8::is_whitespace(cp)) return CharClass::Space;
  if (unicode::is_letter(cp)) return CharClass::Letter;
  if (unicode::is_number(cp)) return CharClass::Number;
  return CharClass::Other;
}

}  // namespace atlas
