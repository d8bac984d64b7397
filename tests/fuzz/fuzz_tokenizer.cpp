// libFuzzer target: the foundation tokenizers, GPT-2 BPE and WordPiece on arbitrary bytes.
// Needs core/tokenizers/tokenizer.cpp, bpe_tokenizer.cpp, wordpiece_tokenizer.cpp, unicode_categories*.cpp
// and utf8.cpp (headers: core/tokenizers/tokenizer.h, config.h, trace.h, tensor.h -> Eigen, error.h).
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Icore -I/usr/include/eigen3 \
//     tests/fuzz/fuzz_tokenizer.cpp core/tokenizers/tokenizer.cpp core/tokenizers/bpe_tokenizer.cpp \
//     core/tokenizers/wordpiece_tokenizer.cpp core/unicode_categories*.cpp core/tokenizers/utf8.cpp -o fuzz_tokenizer
// Checks, against a validator written here (not core/tokenizers/utf8.cpp): every label and error message
// is valid UTF-8; bytes never refuses input and returns the bytes; chars and words refuse
// exactly the invalid inputs; chars returns one token per code point; word labels are the
// input's words in order; every id is inside the vocab; BPE and WordPiece refuse exactly the
// invalid inputs, with a message naming the byte offset; BPE's tokens spell the input's bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tensor/error.h"
#include "core/tokenizers/tokenizer.h"

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

// GPT-2's bytes_to_unicode() rewritten here: the UTF-8 of the symbol of each byte.
std::string byte_symbol(int b) {
  static int table[256];
  static bool filled = false;
  if (!filled) {
    int next = 256;
    for (int i = 0; i < 256; ++i) {
      const bool keep = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174;
      table[i] = keep ? i : next++;
    }
    filled = true;
  }
  const int cp = table[b];
  if (cp < 0x80) return std::string(1, char(cp));
  return {char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
}

// The raw bytes of each id of the tiny BPE vocab below.
const std::vector<std::string>& bpe_bytes() {
  static const std::vector<std::string> bytes = [] {
    std::vector<std::string> out;
    for (int b = 0; b < 256; ++b) out.push_back(std::string(1, char(b)));
    for (const char* extra : {" t", "he", " the", "\xC3\xA9", "  ", "<|endoftext|>"})
      out.push_back(extra);
    return out;
  }();
  return bytes;
}

atlas::TokenizerConfig bpe_config() {
  atlas::TokenizerConfig c;
  c.kind = atlas::TokenizerKind::Gpt2Bpe;
  for (int b = 0; b < 256; ++b) c.vocab.push_back(byte_symbol(b));
  const std::string sp = byte_symbol(' ');
  c.vocab.insert(c.vocab.end(), {sp + "t", "he", sp + "the", byte_symbol(0xC3) + byte_symbol(0xA9),
                                 sp + sp, "<|endoftext|>"});
  c.merges = {sp + " t", "h e", sp + "t he", byte_symbol(0xC3) + " " + byte_symbol(0xA9),
              sp + " " + sp};
  return c;
}

atlas::TokenizerConfig wordpiece_config() {
  atlas::TokenizerConfig c;
  c.kind = atlas::TokenizerKind::WordPiece;
  c.vocab = {"[UNK]", "[CLS]", "[SEP]", "the", "##s", "cafe", "\xE4\xB8\xAD", ",", "a"};
  c.unk = "[UNK]";
  c.lowercase = true;
  c.strip_accents = true;
  c.max_chars_per_word = 8;
  return c;
}

// The same vocab as a Llama 3 style byte_level_bpe (tokenizer.json pipeline), "<|endoftext|>"
// an added token.
atlas::TokenizerConfig byte_level_config() {
  atlas::TokenizerConfig c = bpe_config();
  c.kind = atlas::TokenizerKind::ByteLevelBpe;
  c.split_regex = atlas::SplitRegex::Llama3;
  c.unk = "";
  c.added_tokens = {atlas::AddedToken{"<|endoftext|>"}};
  return c;
}

// A Llama 2 style sentencepiece_bpe: "▁" prefix, byte fallback for everything not in the vocab.
atlas::TokenizerConfig sentencepiece_config() {
  atlas::TokenizerConfig c;
  c.kind = atlas::TokenizerKind::SentencePieceBpe;
  c.vocab = {"<unk>", "<s>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "ab"};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) c.vocab.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
  c.merges = {"a b", "\xE2\x96\x81 ab"};
  c.unk = "<unk>";
  c.byte_fallback = true;
  c.space_prefix = atlas::SpacePrefix::Prepend;
  c.added_tokens = {atlas::AddedToken{"<s>"}};
  c.bos = "<s>";
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
  std::unique_ptr<atlas::Tokenizer> bpe = atlas::make_tokenizer(bpe_config());
  std::unique_ptr<atlas::Tokenizer> wordpiece = atlas::make_tokenizer(wordpiece_config());
  std::unique_ptr<atlas::Tokenizer> byte_level = atlas::make_tokenizer(byte_level_config());
  std::unique_ptr<atlas::Tokenizer> sentencepiece = atlas::make_tokenizer(sentencepiece_config());
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

  // GPT-2 BPE: refuses exactly the invalid input, naming a byte offset; otherwise the tokens'
  // bytes, in order, are the input.
  std::vector<atlas::TokenInfo> bpe;
  try {
    bpe = toks.bpe->encode(text);
    require(valid, "bpe refuses invalid input");
  } catch (const atlas::AtlasError& e) {
    require(!valid, "bpe accepts valid input");
    require(std::string(e.what()).find("at byte ") != std::string::npos, "bpe names the byte");
    require(independent_valid_utf8(e.what()), "bpe error message is valid UTF-8");
  }
  if (valid) {
    check_labels(*toks.bpe, bpe);
    std::string spelled;
    for (const atlas::TokenInfo& t : bpe) spelled += bpe_bytes()[t.id];
    require(spelled == text, "bpe: the tokens spell the input");
  }
  // The pre-tokeniser's pieces tile the input.
  if (valid) {
    size_t end = 0;
    for (const auto& [b, e] : atlas::gpt2_pretokenize(text)) {
      require(b == end && e > b, "pre-tokens tile the input");
      end = e;
    }
    require(end == size, "pre-tokens cover the input");
  }

  // Byte-level BPE of tokenizer.json: refuses exactly the invalid input; otherwise the tokens'
  // bytes spell the input, and the Llama 3 / Qwen2 pieces tile it.
  std::vector<atlas::TokenInfo> byte_level;
  require(encode_checked(*toks.byte_level, text, byte_level) == valid,
          "byte_level_bpe refuses iff invalid");
  if (valid) {
    check_labels(*toks.byte_level, byte_level);
    std::string spelled;
    for (const atlas::TokenInfo& t : byte_level) spelled += bpe_bytes()[t.id];
    require(spelled == text, "byte_level_bpe: the tokens spell the input");
    for (const bool single_digits : {false, true}) {
      size_t end = 0;
      for (const auto& [b, e] : atlas::llama3_pretokenize(text, single_digits)) {
        require(b == end && e > b, "llama3 pre-tokens tile the input");
        end = e;
      }
      require(end == size, "llama3 pre-tokens cover the input");
    }
  }
  // SentencePiece-style BPE with byte fallback: refuses exactly the invalid input; <s> first,
  // every id inside the vocab.
  std::vector<atlas::TokenInfo> spm;
  require(encode_checked(*toks.sentencepiece, text, spm) == valid,
          "sentencepiece_bpe refuses iff invalid");
  if (valid) {
    require(!spm.empty() && spm.front().id == 1, "sentencepiece_bpe: <s> first");
    check_labels(*toks.sentencepiece, spm);
  }

  // WordPiece: refuses exactly the invalid input; [CLS] first, [SEP] last.
  std::vector<atlas::TokenInfo> pieces;
  require(encode_checked(*toks.wordpiece, text, pieces) == valid, "wordpiece refuses iff invalid");
  if (valid) {
    require(pieces.size() >= 2 && pieces.front().id == 1 && pieces.back().id == 2,
            "wordpiece: [CLS] ... [SEP]");
  }
  return 0;
}
