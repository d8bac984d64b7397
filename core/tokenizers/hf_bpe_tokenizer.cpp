// Llama-family tokenizer.json BPE. The reference is the `tokenizers` library's pipeline
// (AddedVocabulary::extract_and_normalize, the Prepend/Replace/NFC normalizers, the Split,
// ByteLevel and Metaspace pre-tokenizers, models::bpe); where it matters the comments say which
// step a piece of code stands for.
#include "core/tokenizers/hf_bpe_tokenizer.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/unicode_nfc.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // "▁" U+2581

std::string quote_text(std::string_view s) {  // for messages: valid UTF-8 only
  return "\"" + (utf8::is_valid(s) ? std::string(s) : std::string("?")) + "\"";
}

std::string byte_token(uint8_t b) {  // "<0x41>", as the `tokenizers` byte fallback spells it
  constexpr const char* kHex = "0123456789ABCDEF";
  return std::string("<0x") + kHex[b >> 4] + kHex[b & 0xF] + ">";
}


// The `regex` crate's \w, which decides single_word: letters, marks, digits, connector
// punctuation. Approximated with the tables at hand: L*, N*, Mn, "_" and the joiners.
bool is_word_char(char32_t cp) {
  return cp == '_' || cp == 0x200C || cp == 0x200D || unicode::is_letter(cp) ||
         unicode::is_number(cp) || unicode::is_nonspacing_mark(cp);
}

// The code point that ends just before byte `pos` (pos > 0, valid UTF-8).
char32_t code_point_before(std::string_view s, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  return utf8::decode(s, start).code_point;
}

struct Split {
  size_t begin, end;
  int32_t id;  // -1: text to tokenize
};

// AddedVocabulary::find_matches: leftmost-longest matches of the added tokens, with their
// single_word, lstrip and rstrip rules; the splits tile `s`. `by_first_byte` lists, for each
// first byte, the matchers starting with it, longest first.
std::vector<Split> split_added(std::string_view s,
                               const std::vector<HfBpeTokenizer::Matcher>& matchers,
                               const std::array<std::vector<uint32_t>, 256>& by_first_byte) {
  std::vector<Split> out;
  size_t done = 0;  // end of the previous split
  size_t pos = 0;
  while (pos < s.size()) {
    const HfBpeTokenizer::Matcher* best = nullptr;
    for (const uint32_t m : by_first_byte[static_cast<uint8_t>(s[pos])]) {
      if (s.compare(pos, matchers[m].pattern.size(), matchers[m].pattern) == 0) {
        best = &matchers[m];
        break;
      }
    }
    if (!best) {
      ++pos;  // patterns are valid UTF-8, so they never match inside a character
      continue;
    }
    size_t start = pos, stop = pos + best->pattern.size();
    pos = stop;
    const AddedToken& t = best->token;
    if (t.single_word && ((start > 0 && is_word_char(code_point_before(s, start))) ||
                          (stop < s.size() && is_word_char(utf8::decode(s, stop).code_point))))
      continue;  // inside a word: not this token, and the search goes on after it
    if (t.lstrip)  // the whitespace before it, but not what an earlier split took
      while (start > done && utf8::is_whitespace(code_point_before(s, start)))
        start -= utf8::encode(code_point_before(s, start)).size();
    if (t.rstrip)
      while (stop < s.size() && utf8::is_whitespace(utf8::decode(s, stop).code_point))
        stop += utf8::decode(s, stop).length;
    if (done < start) out.push_back({done, start, -1});
    out.push_back({start, stop, best->id});
    done = pos = stop;
  }
  if (done < s.size()) out.push_back({done, s.size(), -1});
  return out;
}

void index_matchers(const std::vector<HfBpeTokenizer::Matcher>& matchers,
                    std::array<std::vector<uint32_t>, 256>& by_first_byte) {
  for (uint32_t i = 0; i < matchers.size(); ++i)
    by_first_byte[static_cast<uint8_t>(matchers[i].pattern[0])].push_back(i);
  for (auto& list : by_first_byte)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return matchers[a].pattern.size() > matchers[b].pattern.size();
    });
}

}  // namespace

HfBpeTokenizer::HfBpeTokenizer(const TokenizerConfig& config)
    : m_kind(config.kind == TokenizerKind::ByteLevelBpe ? "byte_level_bpe" : "sentencepiece_bpe"),
      m_config(config) {
  if (config.kind != TokenizerKind::ByteLevelBpe && config.kind != TokenizerKind::SentencePieceBpe)
    throw AtlasError("tokenizer: HfBpeTokenizer takes a byte_level_bpe or sentencepiece_bpe "
                     "config");
  m_config.vocab.clear();  // held once, in m_vocab
  m_config.merges.clear();
  m_vocab = config.vocab;
  check_vocab_and_merges(config);

  const bool byte_level = config.kind == TokenizerKind::ByteLevelBpe;
  if (!byte_level) {
    if (!config.unk.empty()) m_unk = require_id(config.unk, "the unknown token");
    if (!config.byte_fallback && config.unk.empty())
      throw AtlasError(std::string("tokenizer (") + m_kind + "): without byte_fallback a "
                       "character missing from the vocab needs an unknown token; set "
                       "tokenizer.unk");
  }
  for (const AddedToken& t : config.added_tokens) {
    if (t.content.empty())
      throw AtlasError(std::string("tokenizer (") + m_kind + "): an added token is empty");
    const int32_t id = require_id(t.content, "added token");
    m_added_ids.insert(id);
    // Normalized tokens are looked for in the normalized text, as their normalized form
    // (with the Prepend normalizer "<pad>" is looked for as "▁<pad>").
    std::vector<Matcher>& list = t.normalized ? m_normalized_matchers : m_raw_matchers;
    list.push_back({t.normalized ? normalize(t.content) : t.content, id, t});
  }
  index_matchers(m_raw_matchers, m_raw_by_byte);
  index_matchers(m_normalized_matchers, m_normalized_by_byte);
  if (!config.bos.empty()) m_bos = require_id(config.bos, "the BOS token");
  if (!config.eos.empty()) m_eos = require_id(config.eos, "the EOS token");
}

int32_t HfBpeTokenizer::require_id(const std::string& token, const std::string& what) const {
  const auto it = m_ids.find(token);
  if (it == m_ids.end())
    throw AtlasError(std::string("tokenizer (") + m_kind + "): " + what + " " + quote_text(token) +
                     " is not in the vocab");
  return it->second;
}

void HfBpeTokenizer::check_vocab_and_merges(const TokenizerConfig& config) {
  const std::string kind = std::string("tokenizer (") + m_kind + "): ";
  if (m_vocab.empty()) throw AtlasError(kind + "the vocab is empty");
  m_ids.reserve(m_vocab.size());
  for (size_t i = 0; i < m_vocab.size(); ++i) {
    const std::string& entry = m_vocab[i];
    if (entry.empty() || !utf8::is_valid(entry))
      throw AtlasError(kind + "vocab entry " + std::to_string(i) +
                       (entry.empty() ? " is empty" : " is not valid UTF-8"));
    if (!m_ids.emplace(entry, static_cast<int32_t>(i)).second)
      throw AtlasError(kind + "vocab entry " + std::to_string(i) + " " + quote_text(entry) +
                       " duplicates entry " + std::to_string(m_ids[entry]));
  }
  m_byte_ids.fill(-1);
  for (int b = 0; b < 256; ++b) {
    if (config.kind == TokenizerKind::ByteLevelBpe) {
      // Every byte needs its symbol, so that any text can be encoded.
      const std::string symbol = utf8::encode(gpt2_byte_to_unicode(static_cast<uint8_t>(b)));
      const auto it = m_ids.find(symbol);
      if (it == m_ids.end())
        throw AtlasError(kind + "the vocab has no symbol for byte " +
                         invalid_byte_label(static_cast<uint8_t>(b)) + " (" + quote_text(symbol) +
                         "); a byte-level BPE vocab needs all 256");
      m_byte_ids[b] = it->second;
    } else if (config.byte_fallback) {
      // Some files lack a few (Gemma spells <0x09> as a tab): those bytes fall back to unk.
      const auto it = m_ids.find(byte_token(static_cast<uint8_t>(b)));
      if (it != m_ids.end()) m_byte_ids[b] = it->second;
    }
  }
  m_merges = BpeMerges(
      config.merges,
      [&](std::string_view symbol) {
        const auto it = m_ids.find(symbol);
        return it == m_ids.end() ? -1 : it->second;
      },
      kind);
}

std::string HfBpeTokenizer::normalize(std::string_view text) const {
  if (m_config.kind == TokenizerKind::ByteLevelBpe)
    return m_config.nfc ? to_nfc(text) : std::string(text);
  // Replace(" " -> "▁"), after Prepend("▁") for the older files (which prepends to any
  // non-empty text). The Metaspace pre-tokenizer does the same replacement; doing it here
  // changes nothing but the form normalized added tokens are looked for in.
  std::string out;
  out.reserve(text.size() + text.size() / 4 + kMetaspace.size());
  if (m_config.space_prefix == SpacePrefix::Prepend && !text.empty()) out += kMetaspace;
  for (const char c : text) {
    if (c == ' ')
      out += kMetaspace;
    else
      out += c;
  }
  return out;
}

std::vector<TokenInfo> HfBpeTokenizer::encode(const std::string& text) const {
  if (const size_t bad = utf8::find_invalid(text); bad != std::string_view::npos)
    throw AtlasError(std::string("tokenizer (") + m_kind + "): input is not valid UTF-8 at byte " +
                     std::to_string(bad) + " (" +
                     invalid_byte_label(static_cast<uint8_t>(text[bad])) +
                     "); save the text as UTF-8");
  std::vector<TokenInfo> out;
  if (m_bos >= 0) out.push_back({m_bos, label(m_bos)});
  const std::string_view all(text);
  // extract_and_normalize: raw added tokens first; then each piece between them is
  // normalized on its own and searched for the normalized added tokens.
  for (const Split& raw : split_added(all, m_raw_matchers, m_raw_by_byte)) {
    if (raw.id >= 0) {
      out.push_back({raw.id, bytes_label(all, raw.begin, raw.end, false)});
      continue;
    }
    const std::string norm = normalize(all.substr(raw.begin, raw.end - raw.begin));
    const std::string_view n(norm);
    for (const Split& s : split_added(n, m_normalized_matchers, m_normalized_by_byte)) {
      if (s.id >= 0)
        out.push_back({s.id, bytes_label(n, s.begin, s.end, false)});
      else
        encode_normalized(n.substr(s.begin, s.end - s.begin), raw.begin == 0 && s.begin == 0,
                          out);
    }
  }
  if (m_eos >= 0) out.push_back({m_eos, label(m_eos)});
  return out;
}

void HfBpeTokenizer::encode_normalized(std::string_view piece, bool at_start,
                                       std::vector<TokenInfo>& out) const {
  if (m_config.kind == TokenizerKind::ByteLevelBpe) {
    for (const auto& [b, e] : split_pretokenize(m_config.split_regex, piece))
      encode_byte_level(piece.substr(b, e - b), out);
    return;
  }
  // Metaspace: a "▁" in front (at the start of the input only, for "first") unless the text
  // already starts with one; with split, every "▁" starts a new word (MergedWithNext).
  std::string word;
  const bool prefix = m_config.space_prefix == SpacePrefix::Always ||
                      (m_config.space_prefix == SpacePrefix::First && at_start);
  if (prefix && piece.substr(0, kMetaspace.size()) != kMetaspace) word = kMetaspace;
  word += piece;
  if (!m_config.metaspace_split) {
    encode_sentencepiece(word, out);
    return;
  }
  const std::string_view w(word);
  size_t start = 0;
  for (size_t at = w.find(kMetaspace, 1); at != std::string_view::npos;
       at = w.find(kMetaspace, at + 1)) {
    if (at > start) encode_sentencepiece(w.substr(start, at - start), out);
    start = at;
  }
  if (start < w.size()) encode_sentencepiece(w.substr(start), out);
}

void HfBpeTokenizer::encode_byte_level(std::string_view piece, std::vector<TokenInfo>& out) const {
  if (piece.empty()) return;
  if (m_config.ignore_merges) {  // a piece that is a token is that token, merges or not
    std::string symbols;
    for (const char c : piece) utf8::append(symbols, gpt2_byte_to_unicode(static_cast<uint8_t>(c)));
    if (const auto it = m_ids.find(symbols); it != m_ids.end()) {
      out.push_back({it->second, bytes_label(piece, 0, piece.size(), false)});
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  for (const char c : piece) symbols.push_back({m_byte_ids[static_cast<uint8_t>(c)], 1});
  m_merges.apply(symbols);
  size_t pos = 0;
  for (const Symbol& s : symbols) {
    out.push_back({s.id, bytes_label(piece, pos, pos + s.bytes, false)});
    pos += s.bytes;
  }
}

void HfBpeTokenizer::encode_sentencepiece(std::string_view word, std::vector<TokenInfo>& out) const {
  if (word.empty()) return;
  if (m_config.ignore_merges)
    if (const auto it = m_ids.find(word); it != m_ids.end()) {
      out.push_back({it->second, bytes_label(word, 0, word.size(), true)});
      return;
    }
  // BPE::merge_word: each character is its token if the vocab has it, else its bytes as
  // "<0xXX>" tokens when they all exist (byte_fallback), else the unknown token; adjacent
  // unknown characters share one (fuse_unk).
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool last_unknown = false;
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = utf8::decode(word, pos).length;
    const std::string_view ch = word.substr(pos, len);
    pos += len;
    if (const auto it = m_ids.find(ch); it != m_ids.end()) {
      symbols.push_back({it->second, uint32_t(len)});
      last_unknown = false;
      continue;
    }
    if (m_config.byte_fallback &&
        std::all_of(ch.begin(), ch.end(), [&](char c) { return m_byte_ids[uint8_t(c)] >= 0; })) {
      for (const char c : ch) symbols.push_back({m_byte_ids[static_cast<uint8_t>(c)], 1});
      last_unknown = false;
      continue;
    }
    if (m_unk < 0)
      throw AtlasError(std::string("tokenizer (") + m_kind + "): the character " + quote_text(ch) +
                       " has no token, no byte tokens for all its bytes and there is no "
                       "unknown token");
    if (last_unknown)
      symbols.back().bytes += uint32_t(len);
    else
      symbols.push_back({m_unk, uint32_t(len)});
    last_unknown = true;
  }
  m_merges.apply(symbols);
  size_t pos = 0;
  for (const Symbol& s : symbols) {
    out.push_back({s.id, bytes_label(word, pos, pos + s.bytes, true)});
    pos += s.bytes;
  }
}


std::string HfBpeTokenizer::label(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= m_vocab.size())
    throw AtlasError("tokenizer: token id " + std::to_string(id) + " is out of range [0, " +
                     std::to_string(m_vocab.size()) + ")");
  const std::string& entry = m_vocab[size_t(id)];
  if (m_added_ids.count(id) || id == m_bos || id == m_eos)
    return bytes_label(entry, 0, entry.size(), false);
  if (m_config.kind == TokenizerKind::SentencePieceBpe) {
    for (int b = 0; b < 256; ++b)
      if (m_byte_ids[b] == id)  // a lone byte: its character when ASCII, else its hex form
        return b < 0x80 ? display_char_label(char32_t(b)) : invalid_byte_label(uint8_t(b));
    return bytes_label(entry, 0, entry.size(), true);
  }
  // Byte-level: the bytes the symbols stand for; an entry that is not byte-level text (some
  // special token never listed in added_tokens) reads as itself.
  static const std::array<int16_t, 0x144> byte_of = [] {  // bytes_to_unicode inverted
    std::array<int16_t, 0x144> t;
    t.fill(-1);
    for (int b = 0; b < 256; ++b) t[gpt2_byte_to_unicode(uint8_t(b))] = int16_t(b);
    return t;
  }();
  std::string bytes;
  for (size_t p = 0; p < entry.size();) {
    const utf8::Decoded d = utf8::decode(entry, p);
    const int byte = d.code_point < byte_of.size() ? byte_of[d.code_point] : -1;
    if (byte < 0) return bytes_label(entry, 0, entry.size(), false);
    bytes.push_back(static_cast<char>(byte));
    p += d.length;
  }
  return bytes_label(bytes, 0, bytes.size(), false);
}

}  // namespace atlas
