#pragma once
// Unicode character properties for the Hugging Face tokenizers, from compact tables
// generated out of UnicodeData.txt 15.0 (scripts/gen_unicode_categories.py) so no ICU is needed.
//   GPT-2's pre-tokenisation regex uses \p{L}, \p{N} and \s (utf8::is_whitespace: the
//   `regex` module's \s is the White_Space property).
//   BERT's basic tokenizer uses the categories P*, C*, Zs, Mn, lower-casing and NFD.
#include <string>

namespace atlas::unicode {

bool is_letter(char32_t cp);           // General_Category L* (Lu Ll Lt Lm Lo)
bool is_number(char32_t cp);           // N* (Nd Nl No)
bool is_punctuation(char32_t cp);      // P*
bool is_nonspacing_mark(char32_t cp);  // Mn
bool is_space_separator(char32_t cp);  // Zs
bool is_other(char32_t cp);            // C* (Cc Cf Cs Co), and unassigned code points (Cn)

// Simple lowercase mapping of UnicodeData.txt; the code point itself when it has none.
char32_t to_lower(char32_t cp);

// Appends the canonical decomposition (NFD of the single code point: recursive, Hangul
// syllables split into jamo). Canonical reordering of marks is not done: callers here strip
// or keep whole runs of marks, where order does not change the result.
void append_nfd(std::u32string& out, char32_t cp);

}  // namespace atlas::unicode
