// The three foundation tokenizers (bytes, chars, words) and their config validation.
//
// Labels are what a view prints on an axis, so they must be valid UTF-8 and must show
// invisible characters. The scheme, shared by all three where it applies:
//   printable ASCII          itself                    "a", "{"
//   space, newline, tab      "␣" U+2423, "⏎" U+23CE, "⇥" U+21E5
//   other C0 controls, DEL   hex byte                  "<0x07>", "<0x0D>", "<0x7F>"
//   invisible non-ASCII      code point                "<U+00A0>", "<U+200B>", "<U+0085>"
//     (C1 controls, Unicode whitespace, zero-width and bidi formatting characters: they would
//     otherwise show as nothing, or reorder the text around them)
//   any other character      itself                    "é", "中", "😀"
// Bytes of a non-ASCII character, when the tokenizer sees the whole text (encode):
//   lead byte of a valid sequence    the whole character, by the rules above   "é"
//   its continuation bytes           "·" U+00B7 + two hex digits               "·A9"
//   a byte in no valid sequence      hex byte                                  "<0xFF>"
// so "é" (C3 A9) reads "é", "·A9": the character sits on its first byte and the middle dot
// says "the rest of the character before". label(id) sees a lone byte, which is no character,
// so it gives the hex form "<0xC3>" for every byte >= 0x80.
#include "core/tokenizers/tokenizer.h"

#include <array>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/hf_bpe_tokenizer.h"
#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"
#include "core/tokenizers/wordpiece_tokenizer.h"
#include "core/tokenizers/string_hash.h"

namespace atlas {
namespace {

constexpr const char* kHexDigits = "0123456789ABCDEF";

std::string hex_byte(uint8_t b) {  // "<0x07>"
  return std::string("<0x") + kHexDigits[b >> 4] + kHexDigits[b & 0xF] + ">";
}

std::string code_point_tag(char32_t cp) {  // "<U+00A0>"
  char buf[16];
  std::snprintf(buf, sizeof buf, "<U+%04X>", static_cast<unsigned>(cp));
  return buf;
}

// Characters that render as nothing (or silently reorder their neighbours) get a visible tag.
bool is_invisible(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || utf8::is_whitespace(cp) || cp == 0x00AD ||
         cp == 0x034F || cp == 0x061C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF ||
         (cp >= 0xFFF9 && cp <= 0xFFFB);
}

std::string display_char(char32_t cp) {
  if (cp == ' ') return "\u2423";
  if (cp == '\n') return "\u23CE";
  if (cp == '\t') return "\u21E5";
  if (cp < 0x20 || cp == 0x7F) return hex_byte(static_cast<uint8_t>(cp));
  if (is_invisible(cp)) return code_point_tag(cp);
  return utf8::encode(cp);
}

// Labels of the 256 lone bytes, and of continuation bytes inside a valid character.
struct ByteLabels {
  std::array<std::string, 256> lone;
  std::array<std::string, 256> continuation;
  ByteLabels() {
    for (int b = 0; b < 256; ++b) {
      lone[b] = b < 0x80 ? display_char(static_cast<char32_t>(b)) : hex_byte(uint8_t(b));
      continuation[b] = std::string("\u00B7") + kHexDigits[b >> 4] + kHexDigits[b & 0xF];
    }
  }
};

const ByteLabels& byte_labels() {
  static const ByteLabels labels;
  return labels;
}

// A vocab entry or text quoted for an error message, with invalid bytes and controls escaped
// so the message itself is valid UTF-8 and readable.
std::string quote_for_message(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  size_t pos = 0;
  while (pos < s.size() && pos < kMax) {
    const uint8_t b = static_cast<uint8_t>(s[pos]);
    const utf8::Decoded d = utf8::decode(s, pos);
    if (d.length == 0 || b < 0x20 || b == 0x7F) {
      out += "\\x";
      out += kHexDigits[b >> 4];
      out += kHexDigits[b & 0xF];
      ++pos;
    } else {
      if (b == '"' || b == '\\') out += '\\';
      out.append(s.substr(pos, d.length));
      pos += d.length;
    }
  }
  if (pos < s.size()) out += "...";
  return out + "\"";
}

[[noreturn]] void throw_invalid_input(const char* kind, std::string_view text, size_t offset) {
  throw AtlasError(std::string("tokenizer (") + kind + "): input is not valid UTF-8 at byte " +
                   std::to_string(offset) + " (" + hex_byte(uint8_t(text[offset])) +
                   "); save the text as UTF-8");
}

int32_t check_id(int32_t id, size_t size) {
  if (id < 0 || static_cast<size_t>(id) >= size)
    throw AtlasError("tokenizer: token id " + std::to_string(id) + " is out of range [0, " +
                     std::to_string(size) + ")");
  return id;
}

using WordMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

bool is_ascii_space(uint8_t b) { return b == ' ' || (b >= 0x09 && b <= 0x0D); }

// Words split by ASCII whitespace only: a lower bound of the word count, good for reserve().
size_t count_ascii_words(std::string_view text) {
  size_t count = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = is_ascii_space(static_cast<uint8_t>(c));
    count += !space && !in_word;
    in_word = !space;
  }
  return count;
}

const char* kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::Bytes: return "bytes";
    case TokenizerKind::Chars: return "chars";
    case TokenizerKind::Words: return "words";
    case TokenizerKind::Gpt2Bpe: return "gpt2_bpe";
    case TokenizerKind::WordPiece: return "wordpiece";
    case TokenizerKind::Labels: return "labels";
    case TokenizerKind::ByteLevelBpe: return "byte_level_bpe";
    case TokenizerKind::SentencePieceBpe: return "sentencepiece_bpe";
  }
  return "?";
}

// Checks what chars and words share: a non-empty vocab of distinct, valid UTF-8 entries that
// contains `unk`. Returns the entry -> id map and the unk id.
WordMap index_vocab(const TokenizerConfig& config, int32_t& unk_id) {
  const char* kind = kind_name(config.kind);
  if (config.vocab.empty())
    throw AtlasError(std::string("tokenizer: the ") + kind +
                     " tokenizer needs a vocab, but tokenizer.vocab is empty");
  WordMap index;
  index.reserve(config.vocab.size());
  for (size_t i = 0; i < config.vocab.size(); ++i) {
    const std::string& entry = config.vocab[i];
    const auto fail = [&](const std::string& problem) {
      throw AtlasError(std::string("tokenizer: ") + kind + " vocab entry " + std::to_string(i) +
                       " " + quote_for_message(entry) + " " + problem);
    };
    if (entry.empty()) fail("is empty");
    const size_t bad = utf8::find_invalid(entry);
    if (bad != std::string_view::npos) fail("is not valid UTF-8 at byte " + std::to_string(bad));
    const auto [it, inserted] = index.emplace(entry, static_cast<int32_t>(i));
    if (!inserted) fail("duplicates entry " + std::to_string(it->second));
  }
  const auto unk = index.find(config.unk);
  if (unk == index.end())
    throw AtlasError("tokenizer: unknown-token label " + quote_for_message(config.unk) +
                     " is not in the vocab (" + std::to_string(config.vocab.size()) +
                     " entries); add it to tokenizer.vocab or set tokenizer.unk to an entry");
  unk_id = unk->second;
  return index;
}

class BytesTokenizer final : public Tokenizer {
 public:
  std::vector<TokenInfo> encode(const std::string& text) const override {
    const ByteLabels& labels = byte_labels();
    std::vector<TokenInfo> out(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
      const uint8_t b = static_cast<uint8_t>(text[pos]);
      out[pos].id = b;
      const utf8::Decoded d = b < 0x80 ? utf8::Decoded{b, 1} : utf8::decode(text, pos);
      if (d.length <= 1) {  // ASCII, or a byte in no valid sequence
        out[pos].label = labels.lone[b];
        ++pos;
        continue;
      }
      out[pos].label = display_char(d.code_point);
      for (size_t i = 1; i < d.length; ++i) {
        const uint8_t c = static_cast<uint8_t>(text[pos + i]);
        out[pos + i].id = c;
        out[pos + i].label = labels.continuation[c];
      }
      pos += d.length;
    }
    return out;
  }
  std::string label(int32_t id) const override { return byte_labels().lone[check_id(id, 256)]; }
  int64_t vocab_size() const override { return 256; }
};

class CharsTokenizer final : public Tokenizer {
 public:
  explicit CharsTokenizer(const TokenizerConfig& config) {
    index_vocab(config, m_unk);  // validates the shared rules; lookup below is by code point
    m_ascii_ids.fill(m_unk);
    m_labels.reserve(config.vocab.size());
    for (size_t i = 0; i < config.vocab.size(); ++i) {
      const std::string& entry = config.vocab[i];
      const utf8::Decoded d = utf8::decode(entry, 0);
      if (d.length == entry.size()) {
        if (d.code_point < 0x80)
          m_ascii_ids[d.code_point] = static_cast<int32_t>(i);
        else
          m_ids.emplace(d.code_point, static_cast<int32_t>(i));
        m_labels.push_back(display_char(d.code_point));
      } else if (static_cast<int32_t>(i) == m_unk) {
        // The unknown token is never produced by lookup, so it may be a tag like "<unk>".
        m_labels.push_back(entry);
      } else {
        size_t count = 0;
        for (size_t p = 0; p < entry.size(); p += utf8::decode(entry, p).length) ++count;
        throw AtlasError("tokenizer: chars vocab entry " + std::to_string(i) + " " +
                         quote_for_message(entry) + " must be exactly one character (it has " +
                         std::to_string(count) + "); only the unknown token " +
                         quote_for_message(config.unk) + " may be longer");
      }
    }
  }

  std::vector<TokenInfo> encode(const std::string& text) const override {
    std::vector<TokenInfo> out;
    out.reserve(text.size());
    size_t pos = 0;
    const ByteLabels& labels = byte_labels();
    while (pos < text.size()) {
      const uint8_t b = static_cast<uint8_t>(text[pos]);
      if (b < 0x80) {  // fast path: most text is mostly ASCII
        TokenInfo& t = out.emplace_back();  // assigning in place skips a temporary's move
        t.id = m_ascii_ids[b];
        t.label = labels.lone[b];
        ++pos;
        continue;
      }
      const utf8::Decoded d = utf8::decode(text, pos);
      if (d.length == 0) throw_invalid_input("chars", text, pos);
      const auto it = m_ids.find(d.code_point);
      out.push_back({it == m_ids.end() ? m_unk : it->second, display_char(d.code_point)});
      pos += d.length;
    }
    return out;
  }
  std::string label(int32_t id) const override { return m_labels[check_id(id, m_labels.size())]; }
  int64_t vocab_size() const override { return static_cast<int64_t>(m_labels.size()); }

 private:
  std::array<int32_t, 128> m_ascii_ids;          // ASCII code point -> id (unk when absent)
  std::unordered_map<char32_t, int32_t> m_ids;  // the other code points
  std::vector<std::string> m_labels;            // [vocab]
  int32_t m_unk = 0;
};

class WordsTokenizer final : public Tokenizer {
 public:
  explicit WordsTokenizer(const TokenizerConfig& config)
      : m_vocab(config.vocab), m_lowercase(config.lowercase) {
    m_ids = index_vocab(config, m_unk);
    for (size_t i = 0; i < m_vocab.size(); ++i) {
      const std::string& entry = m_vocab[i];
      for (size_t p = 0; p < entry.size();) {
        const utf8::Decoded d = utf8::decode(entry, p);
        if (utf8::is_whitespace(d.code_point))
          throw AtlasError("tokenizer: words vocab entry " + std::to_string(i) + " " +
                           quote_for_message(entry) + " contains whitespace (" +
                           code_point_tag(d.code_point) + " at byte " + std::to_string(p) +
                           "), so no input word can ever match it");
        p += d.length;
      }
    }
  }

  std::vector<TokenInfo> encode(const std::string& text) const override {
    std::vector<TokenInfo> out;
    out.reserve(count_ascii_words(text));  // growing a vector of strings costs more than a scan
    std::string key;
    size_t start = std::string::npos;  // first byte of the word being read
    const auto finish = [&](size_t end) {
      const std::string_view surface(text.data() + start, end - start);
      std::string_view lookup = surface;
      if (m_lowercase) {
        key.assign(surface);
        for (char& c : key)
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        lookup = key;
      }
      const auto it = m_ids.find(lookup);
      out.push_back({it == m_ids.end() ? m_unk : it->second, std::string(surface)});
      start = std::string::npos;
    };
    size_t pos = 0;
    while (pos < text.size()) {
      const uint8_t b = static_cast<uint8_t>(text[pos]);
      const utf8::Decoded d = b < 0x80 ? utf8::Decoded{b, 1} : utf8::decode(text, pos);
      if (d.length == 0) throw_invalid_input("words", text, pos);
      if (b < 0x80 ? is_ascii_space(b) : utf8::is_whitespace(d.code_point)) {
        if (start != std::string::npos) finish(pos);
      } else if (start == std::string::npos) {
        start = pos;
      }
      pos += d.length;
    }
    if (start != std::string::npos) finish(text.size());
    return out;
  }
  std::string label(int32_t id) const override { return m_vocab[check_id(id, m_vocab.size())]; }
  int64_t vocab_size() const override { return static_cast<int64_t>(m_vocab.size()); }

 private:
  std::vector<std::string> m_vocab;  // [vocab]; labels by id
  WordMap m_ids;
  bool m_lowercase = false;
  int32_t m_unk = 0;
};

// An image classifier's (ViT) class names: labels the outputs, reads no text.
class LabelsTokenizer final : public Tokenizer {
 public:
  explicit LabelsTokenizer(const TokenizerConfig& config) : m_labels(config.vocab) {}
  std::vector<TokenInfo> encode(const std::string&) const override {
    throw AtlasError("this model reads images, not text: open an image (Model > Open image as "
                     "input, drop one on the window, or atlas run --image FILE)");
  }
  std::string label(int32_t id) const override {
    return id >= 0 && size_t(id) < m_labels.size() ? m_labels[size_t(id)] : "<" + std::to_string(id) + ">";
  }
  int64_t vocab_size() const override { return static_cast<int64_t>(m_labels.size()); }

 private:
  std::vector<std::string> m_labels;
};

}  // namespace

std::string display_char_label(char32_t code_point) { return display_char(code_point); }

std::string bytes_label(std::string_view s, size_t begin, size_t end, bool metaspace) {
  std::string out;
  size_t pos = begin;
  while (pos < end) {
    const uint8_t b = static_cast<uint8_t>(s[pos]);
    const utf8::Decoded d = utf8::decode(s, pos);
    if (d.length == 0) {
      // In valid text a continuation byte that starts no sequence continues the character of
      // an earlier token; anything else is a byte in no valid sequence.
      out += (b & 0xC0) == 0x80 ? continuation_byte_label(b) : invalid_byte_label(b);
      ++pos;
      continue;
    }
    out += display_char_label(metaspace && d.code_point == 0x2581 ? U' ' : d.code_point);
    pos += d.length;  // may run past `end`: the whole character sits on this token
  }
  return out;
}
std::string continuation_byte_label(uint8_t byte) { return byte_labels().continuation[byte]; }
std::string invalid_byte_label(uint8_t byte) { return hex_byte(byte); }

std::vector<TokenInfo> Tokenizer::encode_pair(const std::string&, const std::string&) const {
  throw AtlasError("this tokenizer has no sentence pairs (only a BERT WordPiece tokenizer "
                   "has them); give a single text");
}

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerConfig& config) {
  switch (config.kind) {
    case TokenizerKind::Bytes: return std::make_unique<BytesTokenizer>();
    case TokenizerKind::Chars: return std::make_unique<CharsTokenizer>(config);
    case TokenizerKind::Words: return std::make_unique<WordsTokenizer>(config);
    case TokenizerKind::Gpt2Bpe: return std::make_unique<Gpt2BpeTokenizer>(config);
    case TokenizerKind::WordPiece: return std::make_unique<WordPieceTokenizer>(config);
    case TokenizerKind::Labels: return std::make_unique<LabelsTokenizer>(config);
    case TokenizerKind::ByteLevelBpe:
    case TokenizerKind::SentencePieceBpe: return std::make_unique<HfBpeTokenizer>(config);
  }
  throw AtlasError("tokenizer: unknown tokenizer kind " +
                   std::to_string(static_cast<int>(config.kind)));
}

}  // namespace atlas
