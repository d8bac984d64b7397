// BERT's basic tokenizer and WordPiece. The reference is google-research/bert tokenization.py
// (BasicTokenizer, WordpieceTokenizer); Unicode properties come from unicode_categories.h.
#include "core/tokenizers/wordpiece_tokenizer.h"

#include "core/tensor/error.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace {

// tokenization.py _is_whitespace: space, tab, newline, carriage return and category Zs.
bool is_bert_whitespace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || unicode::is_space_separator(cp);
}

// _is_control: category C* except tab, newline and carriage return (whitespace above).
bool is_bert_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return unicode::is_other(cp);
}

// _is_punctuation: every non-letter, non-digit printable ASCII character (so "$", "^", "`"
// count although Unicode says Sc/Sk), plus the P* categories.
bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126))
    return true;
  return cp >= 0x80 && unicode::is_punctuation(cp);
}

// _is_chinese_char: the CJK Unified Ideographs blocks (not Hiragana, Katakana or Hangul, which
// are written with spaces or are alphabets).
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_cased_letter_like(char32_t cp) { return unicode::is_letter(cp); }

// Python's str.lower() of one word: the simple mappings, plus the two rules of SpecialCasing
// that apply without a language: U+0130 (İ) -> "i̇", and capital sigma -> final sigma ς at the
// end of a word that has a letter before it (Final_Sigma, approximated by "letter before,
// no letter after").
std::u32string lower_word(const std::u32string& word) {
  std::u32string out;
  out.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const char32_t cp = word[i];
    if (cp == 0x130) {
      out += U"i\u0307";
    } else if (cp == 0x3A3) {
      const bool before = i > 0 && is_cased_letter_like(word[i - 1]);
      const bool after = i + 1 < word.size() && is_cased_letter_like(word[i + 1]);
      out.push_back(before && !after ? U'\u03C2' : U'\u03C3');
    } else {
      out.push_back(unicode::to_lower(cp));
    }
  }
  return out;
}

// _run_strip_accents: NFD, then drop the nonspacing marks.
std::u32string strip_accents(const std::u32string& word) {
  std::u32string nfd, out;
  for (const char32_t cp : word) unicode::append_nfd(nfd, cp);
  out.reserve(nfd.size());
  for (const char32_t cp : nfd)
    if (!unicode::is_nonspacing_mark(cp)) out.push_back(cp);
  return out;
}

std::string to_utf8(const std::u32string& s) {
  std::string out;
  for (const char32_t cp : s) utf8::append(out, cp);
  return out;
}

}  // namespace

std::vector<std::string> bert_basic_tokenize(std::string_view text, bool lowercase,
                                             bool strip) {
  // _clean_text + _tokenize_chinese_chars + whitespace_tokenize in one pass: controls, NUL and
  // U+FFFD vanish, whitespace separates, a CJK ideograph is a word of its own.
  std::vector<std::u32string> words;
  std::u32string word;
  const auto finish = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const utf8::Decoded d = utf8::decode(text, pos);
    if (d.length == 0)
      throw AtlasError("tokenizer (wordpiece): input is not valid UTF-8 at byte " +
                       std::to_string(pos) + " (" +
                       invalid_byte_label(static_cast<uint8_t>(text[pos])) +
                       "); save the text as UTF-8");
    pos += d.length;
    const char32_t cp = d.code_point;
    if (cp == 0 || cp == 0xFFFD || is_bert_control(cp)) continue;
    if (is_bert_whitespace(cp)) {
      finish();
    } else if (is_cjk(cp)) {
      finish();
      word.push_back(cp);
      finish();
    } else {
      word.push_back(cp);
    }
  }
  finish();

  // Per word: lower-case and/or strip accents, then split off each punctuation character.
  std::vector<std::string> out;
  for (std::u32string& w : words) {
    if (lowercase) w = lower_word(w);
    if (strip) w = strip_accents(w);
    std::u32string piece;
    for (const char32_t cp : w) {
      if (is_bert_punctuation(cp)) {
        if (!piece.empty()) out.push_back(to_utf8(piece));
        piece.clear();
        out.push_back(to_utf8(std::u32string(1, cp)));
      } else {
        piece.push_back(cp);
      }
    }
    if (!piece.empty()) out.push_back(to_utf8(piece));
  }
  return out;
}

WordPieceTokenizer::WordPieceTokenizer(const TokenizerConfig& config)
    : m_vocab(config.vocab),
      m_lowercase(config.lowercase),
      m_strip_accents(config.strip_accents) {
  if (config.max_chars_per_word < 1)
    throw AtlasError("tokenizer (wordpiece): max_chars_per_word must be >= 1, got " +
                     std::to_string(config.max_chars_per_word));
  m_max_chars_per_word = static_cast<size_t>(config.max_chars_per_word);
  m_ids.reserve(m_vocab.size());
  for (size_t i = 0; i < m_vocab.size(); ++i) {
    if (!utf8::is_valid(m_vocab[i]))
      throw AtlasError("tokenizer (wordpiece): vocab entry " + std::to_string(i) +
                       " is not valid UTF-8");
    // vocab.txt loaded into a dict: a repeated line keeps its last id, as transformers does.
    m_ids[m_vocab[i]] = static_cast<int32_t>(i);
  }
  const auto special = [&](const std::string& token, const char* role) {
    const auto it = m_ids.find(token);
    if (it == m_ids.end())
      throw AtlasError(std::string("tokenizer (wordpiece): the ") + role + " token \"" +
                       (utf8::is_valid(token) ? token : "?") + "\" is not in the vocab (" +
                       std::to_string(m_vocab.size()) + " entries)");
    return it->second;
  };
  m_unk = special(config.unk, "unknown");
  m_cls = special(config.cls, "classification");
  m_sep = special(config.sep, "separator");
  // Special tokens typed in the text stay whole ("the [MASK] sat"), as BertTokenizer's
  // all_special_tokens do; matched case-sensitively, before lower-casing.
  for (const std::string& token : {config.unk, config.cls, config.sep, std::string("[PAD]"),
                                   std::string("[MASK]")})
    if (const auto it = m_ids.find(token); it != m_ids.end() && !token.empty())
      m_specials.emplace_back(token, it->second);
}

void WordPieceTokenizer::append_wordpieces(const std::string& word, int32_t type,
                                           std::vector<TokenInfo>& out) const {
  // Character boundaries (byte offsets), so pieces never cut a character.
  std::vector<size_t> bounds;
  for (size_t p = 0; p < word.size(); p += std::max<size_t>(1, utf8::decode(word, p).length))
    bounds.push_back(p);
  const size_t chars = bounds.size();
  bounds.push_back(word.size());
  if (chars > m_max_chars_per_word) {
    append_special(m_unk, type, out);
    return;
  }
  const size_t first = out.size();
  std::string key;
  size_t start = 0;
  while (start < chars) {
    int32_t found = -1;
    size_t end = chars;
    for (; end > start; --end) {  // longest match first
      key.clear();
      if (start > 0) key += "##";
      key.append(word, bounds[start], bounds[end] - bounds[start]);
      if (const auto it = m_ids.find(key); it != m_ids.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // one unmatchable piece makes the whole word unknown
      out.resize(first);
      append_special(m_unk, type, out);
      return;
    }
    out.push_back({found, m_vocab[found], type});
    start = end;
  }
}

void WordPieceTokenizer::append_special(int32_t id, int32_t type,
                                        std::vector<TokenInfo>& out) const {
  out.push_back({id, m_vocab[id], type});
}

void WordPieceTokenizer::append_text(const std::string& text, int32_t type,
                                     std::vector<TokenInfo>& out) const {
  size_t done = 0;
  while (done <= text.size()) {
    size_t at = std::string::npos;  // the earliest special token from `done`, longest first
    const std::pair<std::string, int32_t>* hit = nullptr;
    for (const auto& sp : m_specials) {
      const size_t p = text.find(sp.first, done);
      if (p != std::string::npos && (p < at || (p == at && sp.first.size() > hit->first.size()))) {
        at = p;
        hit = &sp;
      }
    }
    const size_t end = hit ? at : text.size();
    for (const std::string& word :
         bert_basic_tokenize(std::string_view(text).substr(done, end - done), m_lowercase, m_strip_accents))
      append_wordpieces(word, type, out);
    if (!hit) break;
    append_special(hit->second, type, out);
    done = at + hit->first.size();
  }
  append_special(m_sep, type, out);
}

std::vector<TokenInfo> WordPieceTokenizer::encode(const std::string& text) const {
  std::vector<TokenInfo> out;
  append_special(m_cls, 0, out);
  append_text(text, 0, out);
  return out;
}

std::vector<TokenInfo> WordPieceTokenizer::encode_pair(const std::string& a,
                                                       const std::string& b) const {
  std::vector<TokenInfo> out;
  append_special(m_cls, 0, out);
  append_text(a, 0, out);
  append_text(b, 1, out);
  return out;
}

std::string WordPieceTokenizer::label(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= m_vocab.size())
    throw AtlasError("tokenizer: token id " + std::to_string(id) + " is out of range [0, " +
                     std::to_string(m_vocab.size()) + ")");
  return m_vocab[id];
}

}  // namespace atlas
