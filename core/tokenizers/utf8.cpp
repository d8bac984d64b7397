#include "core/tokenizers/utf8.h"

#include <cstdint>

namespace atlas::utf8 {

Decoded decode(std::string_view text, size_t pos) {
  const size_t n = text.size();
  if (pos >= n) return {};
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1};

  // The lead byte fixes the length and the smallest code point that length may encode (to
  // reject overlong forms). C0, C1 and F5..FF can never start a valid sequence.
  size_t len = 0;
  char32_t cp = 0;
  char32_t min_cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F, min_cp = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F, min_cp = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07, min_cp = 0x10000;
  } else {
    return {};
  }
  if (n - pos < len) return {};
  for (size_t i = 1; i < len; ++i) {
    const uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, len};
}

void append(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode(char32_t code_point) {
  std::string out;
  append(out, code_point);
  return out;
}

size_t find_invalid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {  // ASCII fast path
      ++pos;
      continue;
    }
    const Decoded d = decode(text, pos);
    if (d.length == 0) return pos;
    pos += d.length;
  }
  return std::string_view::npos;
}

bool is_valid(std::string_view text) { return find_invalid(text) == std::string_view::npos; }

bool is_whitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x0085: case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace atlas::utf8
