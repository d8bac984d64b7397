// Tokenizers against hand-worked ids and labels. Label bytes are written out by hand
// ("\xE2\x90\xA3" is U+2423 ␣), and label validity is checked by a validator written here
// from Unicode Table 3-7, independent of core/tokenizers/utf8.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/tensor/error.h"
#include "core/tokenizers/tokenizer.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::labels_of;
using atlas::test::ids_of;

namespace {

const std::string kSpace = "\xE2\x90\xA3";    // U+2423 ␣
const std::string kNewline = "\xE2\x8F\x8E";  // U+23CE ⏎
const std::string kTab = "\xE2\x87\xA5";      // U+21E5 ⇥
const std::string kDot = "\xC2\xB7";          // U+00B7 ·

// Well-formed byte sequences, Unicode Table 3-7: each row lists the allowed range of every byte.
bool independent_valid_utf8(const std::string& s) {
  struct Row {
    int n;
    uint8_t lo[4], hi[4];
  };
  static const Row rows[] = {
      {1, {0x00}, {0x7F}},
      {2, {0xC2, 0x80}, {0xDF, 0xBF}},
      {3, {0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}},
      {3, {0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}},
      {3, {0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}},
      {3, {0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}},
      {4, {0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}},
      {4, {0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}},
      {4, {0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}},
  };
  size_t i = 0;
  while (i < s.size()) {
    bool matched = false;
    for (const Row& r : rows) {
      if (i + r.n > s.size()) continue;
      bool ok = true;
      for (int k = 0; k < r.n; ++k) {
        const uint8_t b = static_cast<uint8_t>(s[i + k]);
        ok = ok && b >= r.lo[k] && b <= r.hi[k];
      }
      if (ok) {
        i += r.n;
        matched = true;
        break;
      }
    }
    if (!matched) return false;
  }
  return true;
}

TokenizerConfig chars_config(std::vector<std::string> vocab, std::string unk = "<unk>") {
  TokenizerConfig c;
  c.kind = TokenizerKind::Chars;
  c.vocab = std::move(vocab);
  c.unk = std::move(unk);
  return c;
}

TokenizerConfig words_config(std::vector<std::string> vocab, bool lowercase = false) {
  TokenizerConfig c;
  c.kind = TokenizerKind::Words;
  c.vocab = std::move(vocab);
  c.lowercase = lowercase;
  return c;
}

std::string tokenizer_error_of(const TokenizerConfig& config) {
  try {
    make_tokenizer(config);
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string encode_error_of(const Tokenizer& tok, const std::string& text) {
  try {
    tok.encode(text);
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("independent validator used as the oracle agrees with hand examples", "[tokenizer]") {
  CHECK(independent_valid_utf8("h\xC3\xA9llo"));
  CHECK(independent_valid_utf8(kSpace + kNewline + kTab + kDot));
  CHECK_FALSE(independent_valid_utf8("\xC3"));
  CHECK_FALSE(independent_valid_utf8("\xED\xA0\x80"));
  CHECK_FALSE(independent_valid_utf8("\xC0\xAF"));
}

TEST_CASE("bytes tokenizer: héllo gives the byte values and a character on its lead byte",
          "[tokenizer]") {
  const auto tok = make_tokenizer(TokenizerConfig{});
  CHECK(tok->vocab_size() == 256);
  const auto tokens = tok->encode("h\xC3\xA9llo");
  CHECK(ids_of(tokens) == std::vector<int32_t>{104, 195, 169, 108, 108, 111});
  CHECK(labels_of(tokens) ==
        std::vector<std::string>{"h", "\xC3\xA9", kDot + "A9", "l", "l", "o"});
}

TEST_CASE("bytes tokenizer labels whitespace and control bytes visibly", "[tokenizer]") {
  const auto tok = make_tokenizer(TokenizerConfig{});
  const std::string text("a \n\t\r\x07\x7F", 7);
  const auto tokens = tok->encode(text);
  CHECK(ids_of(tokens) == std::vector<int32_t>{97, 32, 10, 9, 13, 7, 127});
  CHECK(labels_of(tokens) == std::vector<std::string>{"a", kSpace, kNewline, kTab, "<0x0D>",
                                                      "<0x07>", "<0x7F>"});
  const auto nul = tok->encode(std::string(1, '\0'));
  REQUIRE(nul.size() == 1);
  CHECK(nul[0].id == 0);
  CHECK(nul[0].label == "<0x00>");
}

TEST_CASE("bytes tokenizer labels 3- and 4-byte characters and invisible ones", "[tokenizer]") {
  const auto tok = make_tokenizer(TokenizerConfig{});
  // € = E2 82 AC, 😀 = F0 9F 98 80, no-break space = C2 A0 (invisible: shown as its code point).
  const auto tokens = tok->encode("\xE2\x82\xAC\xF0\x9F\x98\x80\xC2\xA0");
  CHECK(ids_of(tokens) == std::vector<int32_t>{0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xC2,
                                               0xA0});
  CHECK(labels_of(tokens) ==
        std::vector<std::string>{"\xE2\x82\xAC", kDot + "82", kDot + "AC", "\xF0\x9F\x98\x80",
                                 kDot + "9F", kDot + "98", kDot + "80", "<U+00A0>",
                                 kDot + "A0"});
}

TEST_CASE("bytes tokenizer accepts invalid UTF-8 and labels stray bytes in hex", "[tokenizer]") {
  const auto tok = make_tokenizer(TokenizerConfig{});
  // FF never valid; C3 followed by '(' is a lead without continuation; E2 82 is truncated;
  // ED A0 80 encodes a surrogate, so all three of its bytes are stray.
  const auto tokens = tok->encode("\xFF\xC3(\xED\xA0\x80\xE2\x82");
  CHECK(ids_of(tokens) == std::vector<int32_t>{0xFF, 0xC3, '(', 0xED, 0xA0, 0x80, 0xE2, 0x82});
  CHECK(labels_of(tokens) == std::vector<std::string>{"<0xFF>", "<0xC3>", "(", "<0xED>",
                                                      "<0xA0>", "<0x80>", "<0xE2>", "<0x82>"});
}

TEST_CASE("bytes tokenizer label(id) without context", "[tokenizer]") {
  const auto tok = make_tokenizer(TokenizerConfig{});
  CHECK(tok->label('h') == "h");
  CHECK(tok->label(' ') == kSpace);
  CHECK(tok->label('\n') == kNewline);
  CHECK(tok->label('\t') == kTab);
  CHECK(tok->label(0x1B) == "<0x1B>");
  CHECK(tok->label(0xC3) == "<0xC3>");
  CHECK(tok->label(0xA9) == "<0xA9>");
  CHECK(tok->label(255) == "<0xFF>");
  for (int32_t id = 0; id < 256; ++id) {
    INFO("byte " << id);
    CHECK(independent_valid_utf8(tok->label(id)));
    CHECK_FALSE(tok->label(id).empty());
  }
  CHECK_THROWS_AS(tok->label(256), AtlasError);
  CHECK_THROWS_AS(tok->label(-1), AtlasError);
}

TEST_CASE("empty text gives no tokens for every kind", "[tokenizer]") {
  CHECK(make_tokenizer(TokenizerConfig{})->encode("").empty());
  CHECK(make_tokenizer(chars_config({"<unk>", "a"}))->encode("").empty());
  CHECK(make_tokenizer(words_config({"<unk>", "a"}))->encode("").empty());
  CHECK(make_tokenizer(words_config({"<unk>", "a"}))->encode(" \t\n ").empty());
}

TEST_CASE("chars tokenizer maps characters to vocab indices, others to unk", "[tokenizer]") {
  // ids: <unk>=0, a=1, b=2, é=3, space=4, 😀=5
  const auto tok =
      make_tokenizer(chars_config({"<unk>", "a", "b", "\xC3\xA9", " ", "\xF0\x9F\x98\x80"}));
  CHECK(tok->vocab_size() == 6);
  const auto tokens = tok->encode("ab\xC3\xA9 c\xF0\x9F\x98\x80\n");
  CHECK(ids_of(tokens) == std::vector<int32_t>{1, 2, 3, 4, 0, 5, 0});
  // Labels show what was typed, also for unknown characters.
  CHECK(labels_of(tokens) == std::vector<std::string>{"a", "b", "\xC3\xA9", kSpace, "c",
                                                      "\xF0\x9F\x98\x80", kNewline});
  CHECK(tok->label(0) == "<unk>");
  CHECK(tok->label(3) == "\xC3\xA9");
  CHECK(tok->label(4) == kSpace);
  CHECK_THROWS_AS(tok->label(6), AtlasError);
}

TEST_CASE("chars tokenizer accepts a one-character unknown token", "[tokenizer]") {
  const auto tok = make_tokenizer(chars_config({"a", "?"}, "?"));
  CHECK(ids_of(tok->encode("a?z")) == std::vector<int32_t>{0, 1, 1});
}

TEST_CASE("chars tokenizer names the byte offset of invalid UTF-8", "[tokenizer]") {
  const auto tok = make_tokenizer(chars_config({"<unk>", "a"}));
  // 17 valid bytes (one of them part of é), then a lead byte C3 with no continuation.
  const std::string text = "0123456789abc\xC3\xA9" "de\xC3(";
  REQUIRE(text.size() == 19);
  const std::string msg = encode_error_of(*tok, text);
  CHECK_THAT(msg, Catch::Contains("input is not valid UTF-8 at byte 17"));
  CHECK_THAT(encode_error_of(*tok, "\xFF"), Catch::Contains("at byte 0"));
  CHECK_THAT(encode_error_of(*tok, "ab\xED\xA0\x80"), Catch::Contains("at byte 2"));
  CHECK_THAT(encode_error_of(*tok, "abc\xE2\x82"), Catch::Contains("at byte 3"));
  CHECK(independent_valid_utf8(msg));
}

TEST_CASE("words tokenizer lowercases ASCII, maps unknowns to unk, keeps surface labels",
          "[tokenizer]") {
  const std::vector<std::string> vocab = {"<unk>", "the", "cat", "sat", "caf\xC3\xA9"};
  const std::string text = "  The CAT\tsat\non  the mat\r\n";
  {
    const auto tok = make_tokenizer(words_config(vocab, /*lowercase=*/true));
    const auto tokens = tok->encode(text);
    CHECK(ids_of(tokens) == std::vector<int32_t>{1, 2, 3, 0, 1, 0});
    CHECK(labels_of(tokens) == std::vector<std::string>{"The", "CAT", "sat", "on", "the", "mat"});
    CHECK(tok->label(2) == "cat");
    CHECK(tok->label(0) == "<unk>");
    CHECK(tok->vocab_size() == 5);
  }
  {
    const auto tok = make_tokenizer(words_config(vocab, /*lowercase=*/false));
    CHECK(ids_of(tok->encode(text)) == std::vector<int32_t>{0, 0, 3, 0, 1, 0});
  }
  {
    // Only ASCII is lowered: CAFÉ -> "cafÉ", which is not "café".
    const auto tok = make_tokenizer(words_config(vocab, true));
    CHECK(ids_of(tok->encode("Caf\xC3\xA9 CAF\xC3\x89")) == std::vector<int32_t>{4, 0});
  }
}

TEST_CASE("words tokenizer splits on every ASCII and Unicode whitespace", "[tokenizer]") {
  const auto tok = make_tokenizer(words_config({"<unk>", "a", "b"}));
  // \v, \f, \r, no-break space (C2 A0), ideographic space (E3 80 80), line separator (E2 80 A8).
  const std::string text = "a\vb\fa\rb\xC2\xA0" "a\xE3\x80\x80" "b\xE2\x80\xA8" "a";
  const auto tokens = tok->encode(text);
  CHECK(ids_of(tokens) == std::vector<int32_t>{1, 2, 1, 2, 1, 2, 1});
  // A zero-width space (E2 80 8B) is not whitespace: it stays inside the word.
  const auto joined = tok->encode("a\xE2\x80\x8B" "b");
  REQUIRE(joined.size() == 1);
  CHECK(joined[0].id == 0);
  CHECK(joined[0].label == "a\xE2\x80\x8B" "b");
}

TEST_CASE("words tokenizer names the byte offset of invalid UTF-8", "[tokenizer]") {
  const auto tok = make_tokenizer(words_config({"<unk>", "a"}));
  CHECK_THAT(encode_error_of(*tok, "a a \xC3\xA9 \xFF"), Catch::Contains("at byte 7"));
  CHECK_THAT(encode_error_of(*tok, "\x80"), Catch::Contains("at byte 0"));
}

TEST_CASE("tokenizer config validation names the problem", "[tokenizer]") {
  const std::vector<std::string> twelve = {"<UNK>", "a", "b", "c", "d", "e",
                                           "f",     "g", "h", "i", "j", "k"};
  CHECK_THAT(tokenizer_error_of(chars_config(twelve)),
             Catch::Contains(
                 "tokenizer: unknown-token label \"<unk>\" is not in the vocab (12 entries)"));
  CHECK_THAT(tokenizer_error_of(words_config(twelve)),
             Catch::Contains("unknown-token label \"<unk>\" is not in the vocab (12 entries)"));

  CHECK_THAT(tokenizer_error_of(chars_config({})), Catch::Contains("vocab is empty"));
  CHECK_THAT(tokenizer_error_of(words_config({})), Catch::Contains("vocab is empty"));

  const std::string two_chars = tokenizer_error_of(chars_config({"<unk>", "a", "ab"}));
  CHECK_THAT(two_chars, Catch::Contains("entry 2 \"ab\""));
  CHECK_THAT(two_chars, Catch::Contains("exactly one character"));
  CHECK_THAT(tokenizer_error_of(chars_config({"<unk>", "a", ""})),
             Catch::Contains("entry 2 \"\" is empty"));
  CHECK_THAT(tokenizer_error_of(chars_config({"<unk>", "\xC3\xA9", "b", "\xC3\xA9"})),
             Catch::Contains("entry 3 \"\xC3\xA9\" duplicates entry 1"));
  const std::string invalid = tokenizer_error_of(chars_config({"<unk>", "\xFF"}));
  CHECK_THAT(invalid, Catch::Contains("entry 1 \"\\xFF\" is not valid UTF-8 at byte 0"));
  CHECK(independent_valid_utf8(invalid));

  CHECK_THAT(tokenizer_error_of(words_config({"<unk>", "new york"})),
             Catch::Contains("entry 1 \"new york\" contains whitespace"));
  CHECK_THAT(tokenizer_error_of(words_config({"<unk>", "tab\there"})),
             Catch::Contains("contains whitespace"));
  CHECK_THAT(tokenizer_error_of(words_config({"<unk>", "no\xC2\xA0" "break"})),
             Catch::Contains("contains whitespace (<U+00A0>"));
  CHECK_THAT(tokenizer_error_of(words_config({"<unk>", ""})),
             Catch::Contains("entry 1 \"\" is empty"));
  CHECK_THAT(tokenizer_error_of(words_config({"<unk>", "the", "cat", "the"})),
             Catch::Contains("entry 3 \"the\" duplicates entry 1"));

  // The bytes tokenizer has a fixed vocab and ignores the vocab list.
  TokenizerConfig bytes;
  bytes.vocab = {"x", "x"};
  CHECK(make_tokenizer(bytes)->vocab_size() == 256);
}

TEST_CASE("every label on random byte strings is valid UTF-8", "[tokenizer]") {
  const auto bytes = make_tokenizer(TokenizerConfig{});
  const auto chars = make_tokenizer(chars_config({"<unk>", "a", " ", "\xC3\xA9"}));
  const auto words = make_tokenizer(words_config({"<unk>", "a", "ab"}, true));
  // Pieces that make random strings hit both valid multi-byte characters and near-misses.
  const std::vector<std::string> pieces = {
      "a", "A", "b", " ", "\n", "\t", "\r", std::string(1, '\0'), "\x7F", "\xC3\xA9",
      "\xC2\xA0", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xE2\x80\x8B", "\xE3\x80\x80",
      "\xC2\x85", "\xED\xA0\x80", "\xC0\x80", "\xF4\x90\x80\x80"};
  std::mt19937 rng(1234);
  size_t checked_labels = 0;
  size_t rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      if (rng() % 2)
        text += static_cast<char>(rng() % 256);
      else
        text += pieces[rng() % pieces.size()];
    }
    const bool valid = independent_valid_utf8(text);

    const auto bt = bytes->encode(text);
    REQUIRE(bt.size() == text.size());
    for (size_t i = 0; i < bt.size(); ++i) {
      REQUIRE(bt[i].id == static_cast<uint8_t>(text[i]));
      REQUIRE(independent_valid_utf8(bt[i].label));
      REQUIRE_FALSE(bt[i].label.empty());
      ++checked_labels;
    }
    for (const Tokenizer* tok : {chars.get(), words.get()}) {
      std::vector<TokenInfo> tokens;
      bool threw = false;
      try {
        tokens = tok->encode(text);
      } catch (const AtlasError& e) {
        threw = true;
        REQUIRE(independent_valid_utf8(e.what()));
      }
      REQUIRE(threw == !valid);  // exactly the invalid strings are refused
      rejected += threw ? 1 : 0;
      for (const TokenInfo& t : tokens) {
        REQUIRE(t.id >= 0);
        REQUIRE(t.id < tok->vocab_size());
        REQUIRE(independent_valid_utf8(t.label));
        REQUIRE_FALSE(t.label.empty());
        ++checked_labels;
      }
    }
  }
  CHECK(checked_labels > 10000);
  CHECK(rejected > 100);  // the generator does produce invalid input
  CHECK(rejected < 2 * 3000 - 100);  // ... and valid input
}

TEST_CASE("a 1 MB input tokenizes as its repeated unit does", "[tokenizer]") {
  // Mixed ASCII words, two-byte and three-byte characters, so every path is exercised. The
  // unit ends in a newline, so no token spans two units: the long text's tokens are the unit's
  // tokens repeated. (Speed at 64 KB vs 1 MB is bench_tokenizer's "encode scaling" table.)
  const std::string unit = "the cat sat on caf\xC3\xA9 \xE2\x82\xAC" "42 mat\n";
  std::string text;
  while (text.size() < (1u << 20)) text += unit;
  const size_t reps = text.size() / unit.size();
  const auto bytes = make_tokenizer(TokenizerConfig{});
  const auto chars = make_tokenizer(chars_config({"<unk>", "a", "c", "t", " "}));
  const auto words = make_tokenizer(words_config({"<unk>", "the", "cat", "sat"}, true));
  const size_t expected_per_unit[] = {unit.size(), 28, 7};  // bytes; code points; words
  int k = 0;
  for (const Tokenizer* tok : {bytes.get(), chars.get(), words.get()}) {
    const auto one = tok->encode(unit);
    const auto all = tok->encode(text);
    CHECK(one.size() == expected_per_unit[k++]);
    REQUIRE(all.size() == reps * one.size());
    for (const size_t r : {size_t(0), reps / 2, reps - 1})
      for (size_t i = 0; i < one.size(); ++i) {
        CHECK(all[r * one.size() + i].id == one[i].id);
        CHECK(all[r * one.size() + i].label == one[i].label);
      }
  }
}
