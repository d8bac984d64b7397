#pragma once
// Unicode Normalization Form C (UAX #15), for tokenizer.json's NFC normalizer (Qwen2): the
// canonical decomposition (unicode_categories.h), canonical ordering of combining marks by
// their class, then canonical composition with the primary composites and Hangul, from tables
// generated out of the Unicode 15.0 data files (scripts/gen_unicode_nfc.py).
#include <string>
#include <string_view>

namespace atlas {

// The NFC form of valid UTF-8 text (an invalid byte is kept as it is).
std::string to_nfc(std::string_view text);

// Canonical_Combining_Class of a code point (0 for starters).
int canonical_combining_class(char32_t cp);

}  // namespace atlas
