// libFuzzer target: the three tokenizers on arbitrary bytes. Needs core/tokenizer.cpp and
// core/utf8.cpp (headers: core/tokenizer.h, config.h, trace.h, tensor.h -> Eigen, error.h).
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Icore -I/usr/include/eigen3 \
//     tests/fuzz/fuzz_tokenizer.cpp core/tokenizer.cpp core/utf8.cpp -o fuzz_tokenizer
// Checks, against a validator written here (not core/utf8.cpp): every label and error message
// is valid UTF-8; bytes never refuses input and returns the bytes; chars and words refuse
// exactly the invalid inputs; chars returns one token per code point; word labels are the
// input's words in order; every id is inside the vocab.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "error.h"
#include "tokenizer.h"

namespace {

// Well-formed byte sequences, Unicode Table 3-7.
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

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: check failed: %s\n", what);
    std::abort();
  }
}

void check_labels(const atlas::Tokenizer& tok, const std::vector<atlas::TokenInfo>& tokens) {
  for (const atlas::TokenInfo& t : tokens) {
    require(t.id >= 0 && t.id < tok.vocab_size(), "id inside the vocab");
    require(!t.label.empty(), "label is not empty");
    require(independent_valid_utf8(t.label), "encode label is valid UTF-8");
    require(independent_valid_utf8(tok.label(t.id)), "label(id) is valid UTF-8");
  }
}

// Runs a tokenizer that may refuse input; returns false when it refused.
bool encode_checked(const atlas::Tokenizer& tok, const std::string& text,
                    std::vector<atlas::TokenInfo>& tokens) {
  try {
    tokens = tok.encode(text);
  } catch (const atlas::AtlasError& e) {
    require(independent_valid_utf8(e.what()), "error message is valid UTF-8");
    return false;
  }
  check_labels(tok, tokens);
  return true;
}

atlas::TokenizerConfig config(atlas::TokenizerKind kind, std::vector<std::string> vocab,
                              bool lowercase) {
  atlas::TokenizerConfig c;
  c.kind = kind;
  c.vocab = std::move(vocab);
  c.lowercase = lowercase;
  return c;
}

struct Tokenizers {
  std::unique_ptr<atlas::Tokenizer> bytes = atlas::make_tokenizer(atlas::TokenizerConfig{});
  std::unique_ptr<atlas::Tokenizer> chars = atlas::make_tokenizer(
      config(atlas::TokenizerKind::Chars,
             {"<unk>", "a", "b", " ", "\n", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"},
             false));
  std::unique_ptr<atlas::Tokenizer> words = atlas::make_tokenizer(
      config(atlas::TokenizerKind::Words,
             {"<unk>", "a", "the", "caf\xC3\xA9", "\xE2\x82\xAC", "<0xFF>"}, true));
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizers toks;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool valid = independent_valid_utf8(text);

  // Bytes: never refuses; one token per byte, id = byte value. A throw here is a bug, so an
  // AtlasError escaping from it is deliberately not caught.
  const std::vector<atlas::TokenInfo> bytes = toks.bytes->encode(text);
  require(bytes.size() == size, "bytes: one token per byte");
  for (size_t i = 0; i < size; ++i) require(bytes[i].id == data[i], "bytes: id is the byte");
  check_labels(*toks.bytes, bytes);

  // Chars: refuses exactly the invalid input; one token per code point (= non-continuation
  // byte of valid UTF-8).
  std::vector<atlas::TokenInfo> chars;
  require(encode_checked(*toks.chars, text, chars) == valid, "chars refuses iff invalid");
  if (valid) {
    size_t code_points = 0;
    for (size_t i = 0; i < size; ++i) code_points += (data[i] & 0xC0) != 0x80;
    require(chars.size() == code_points, "chars: one token per code point");
  }

  // Words: refuses exactly the invalid input; labels are pieces of the input, in order, with
  // no ASCII whitespace inside.
  std::vector<atlas::TokenInfo> words;
  require(encode_checked(*toks.words, text, words) == valid, "words refuses iff invalid");
  size_t from = 0;
  for (const atlas::TokenInfo& w : words) {
    for (const char c : w.label)
      require(!(c == ' ' || (c >= 0x09 && c <= 0x0D)), "words: no ASCII space in a word");
    const size_t at = text.find(w.label, from);
    require(at != std::string::npos, "words: label is the next piece of the input");
    from = at + w.label.size();
  }
  return 0;
}
