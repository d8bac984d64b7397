// UTF-8 helpers against byte sequences written out by hand (RFC 3629 / Unicode Table 3-7).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/tokenizers/utf8.h"

using namespace atlas;

namespace {

struct Known {
  std::string bytes;
  char32_t cp;
};

// Boundary code points of every length, with their encodings written by hand.
const std::vector<Known> kKnown = {
    {std::string("\x00", 1), 0x0},
    {"A", 0x41},
    {"\x7F", 0x7F},
    {"\xC2\x80", 0x80},
    {"\xC3\xA9", 0xE9},  // é
    {"\xDF\xBF", 0x7FF},
    {"\xE0\xA0\x80", 0x800},
    {"\xE2\x82\xAC", 0x20AC},  // €
    {"\xED\x9F\xBF", 0xD7FF},  // last before the surrogates
    {"\xEE\x80\x80", 0xE000},  // first after them
    {"\xEF\xBF\xBF", 0xFFFF},
    {"\xF0\x90\x80\x80", 0x10000},
    {"\xF0\x9F\x98\x80", 0x1F600},  // 😀
    {"\xF4\x8F\xBF\xBF", 0x10FFFF},
};

}  // namespace

TEST_CASE("utf8 decode reads boundary code points of every length", "[utf8]") {
  for (const Known& k : kKnown) {
    INFO("code point " << static_cast<uint32_t>(k.cp));
    const utf8::Decoded d = utf8::decode(k.bytes, 0);
    CHECK(d.code_point == k.cp);
    CHECK(d.length == k.bytes.size());
    // Decoding in the middle of a longer string reads just that character.
    const std::string padded = "x" + k.bytes + "y";
    CHECK(utf8::decode(padded, 1).length == k.bytes.size());
  }
}

TEST_CASE("utf8 encode writes boundary code points of every length", "[utf8]") {
  for (const Known& k : kKnown) {
    INFO("code point " << static_cast<uint32_t>(k.cp));
    CHECK(utf8::encode(k.cp) == k.bytes);
  }
}

TEST_CASE("utf8 encode replaces surrogates and out-of-range values with U+FFFD", "[utf8]") {
  const std::string replacement = "\xEF\xBF\xBD";
  CHECK(utf8::encode(0xD800) == replacement);
  CHECK(utf8::encode(0xDFFF) == replacement);
  CHECK(utf8::encode(0x110000) == replacement);
  CHECK(utf8::encode(0xFFFFFFFF) == replacement);
  std::string out = "a";
  utf8::append(out, 0xE9);
  CHECK(out == "a\xC3\xA9");
}

TEST_CASE("utf8 decode rejects malformed sequences", "[utf8]") {
  const std::vector<std::string> bad = {
      "\x80",              // stray continuation
      "\xBF",              // stray continuation
      "\xC0\x80",          // overlong NUL
      "\xC1\xBF",          // overlong U+7F
      "\xE0\x80\x80",      // overlong
      "\xE0\x9F\xBF",      // overlong U+7FF
      "\xF0\x80\x80\x80",  // overlong
      "\xF0\x8F\xBF\xBF",  // overlong U+FFFF
      "\xED\xA0\x80",      // surrogate U+D800
      "\xED\xBF\xBF",      // surrogate U+DFFF
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  // lead byte beyond range
      "\xFF",
      "\xFE",
      "\xC3",              // truncated
      "\xE2\x82",          // truncated
      "\xF0\x9F\x98",      // truncated
      "\xC3(",             // continuation missing
      "\xE2(\xAC",         // continuation missing
      "\xF0\x9F\x98(",     // last continuation missing
  };
  for (const std::string& s : bad) {
    INFO("sequence of " << s.size() << " bytes starting 0x" << std::hex
                        << static_cast<int>(static_cast<uint8_t>(s[0])));
    CHECK(utf8::decode(s, 0).length == 0);
    CHECK_FALSE(utf8::is_valid(s));
  }
}

TEST_CASE("utf8 find_invalid names the first bad byte offset", "[utf8]") {
  CHECK(utf8::find_invalid("") == std::string_view::npos);
  CHECK(utf8::find_invalid("h\xC3\xA9llo \xE2\x82\xAC") == std::string_view::npos);
  CHECK(utf8::find_invalid("abc\xFF") == 3);
  CHECK(utf8::find_invalid("\xC3\xA9\xC3\xA9\xE2\x82") == 4);  // truncated € after two é
  CHECK(utf8::find_invalid("\xC3\xA9\x80") == 2);              // extra continuation
  CHECK(utf8::find_invalid("ok\xED\xA0\x80ok") == 2);          // surrogate
  CHECK(utf8::is_valid("h\xC3\xA9llo"));
}

TEST_CASE("utf8 decode and encode round-trip every scalar value", "[utf8]") {
  size_t failures = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string s = utf8::encode(cp);
    const size_t expected_length = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    const utf8::Decoded d = utf8::decode(s, 0);
    if (s.size() != expected_length || d.code_point != cp || d.length != expected_length)
      ++failures;
  }
  CHECK(failures == 0);
}

TEST_CASE("utf8 whitespace is the Unicode White_Space set", "[utf8]") {
  const std::vector<char32_t> spaces = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,
                                        0xA0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
                                        0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028,
                                        0x2029, 0x202F, 0x205F, 0x3000};
  REQUIRE(spaces.size() == 25);
  size_t count = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) count += utf8::is_whitespace(cp) ? 1 : 0;
  CHECK(count == 25);
  for (char32_t cp : spaces) CHECK(utf8::is_whitespace(cp));
  // Look-alikes that are not White_Space: zero-width space, word joiner, BOM, 'a'.
  CHECK_FALSE(utf8::is_whitespace(0x200B));
  CHECK_FALSE(utf8::is_whitespace(0x2060));
  CHECK_FALSE(utf8::is_whitespace(0xFEFF));
  CHECK_FALSE(utf8::is_whitespace('a'));
}
