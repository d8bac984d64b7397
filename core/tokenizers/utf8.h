#pragma once
// Small strict UTF-8 helpers (RFC 3629): the tokenizers use them to split text into code points
// and to promise that every label they hand to a view is valid UTF-8. "Valid" excludes
// overlong forms, UTF-16 surrogates (U+D800..U+DFFF) and anything above U+10FFFF, because a
// lenient decoder would let bytes through that a Qt label or a JSON manifest later rejects.
#include <cstddef>
#include <string>
#include <string_view>

namespace atlas::utf8 {

struct Decoded {
  char32_t code_point = 0;
  size_t length = 0;  // bytes consumed, 1..4; 0 = the bytes at `pos` are not valid UTF-8
};

// Decodes the one code point starting at text[pos] (pos < text.size()). A truncated, overlong,
// surrogate or out-of-range sequence, or a stray continuation byte, gives length 0.
Decoded decode(std::string_view text, size_t pos);

// Appends the encoding of `code_point`; a surrogate or a value above U+10FFFF is written as
// U+FFFD so the output stays valid whatever the caller passes.
void append(std::string& out, char32_t code_point);
std::string encode(char32_t code_point);

// Byte offset of the first invalid sequence, or std::string_view::npos when all is valid.
size_t find_invalid(std::string_view text);
bool is_valid(std::string_view text);

// Unicode White_Space property (the 25 code points of PropList.txt): the ASCII ones
// (\t \n \v \f \r and space), U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F,
// U+205F and U+3000.
bool is_whitespace(char32_t code_point);

}  // namespace atlas::utf8
