// GPT-2 byte-level BPE. The reference is openai/gpt-2 src/encoder.py; where the Hugging Face
// `tokenizers` library chose an equivalent, faster formulation (the merge heap) it is noted.
#include "core/tokenizers/bpe_tokenizer.h"

#include <algorithm>

#include "core/tensor/error.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/utf8.h"
#include "core/tokenizers/string_hash.h"
#include "core/tokenizers/char_class.h"

namespace atlas {
namespace {

// bytes_to_unicode(): the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves; the
// other 68 bytes (controls, space, DEL, NBSP, soft hyphen, ...) get U+0100, U+0101, ... in
// byte order, so that no vocab entry contains whitespace or a control character.
struct ByteUnicodeTable {
  static constexpr char32_t kSymbols = 256 + 68;  // every symbol is below U+0144
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, kSymbols> to_byte{};  // -1: not a byte symbol
  ByteUnicodeTable() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_unicode[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
  int byte_of(char32_t symbol) const { return symbol < kSymbols ? to_byte[symbol] : -1; }
};

const ByteUnicodeTable& byte_table() {
  static const ByteUnicodeTable table;
  return table;
}

[[noreturn]] void throw_invalid_utf8(std::string_view text, size_t offset) {
  throw AtlasError("tokenizer (gpt2_bpe): input is not valid UTF-8 at byte " +
                   std::to_string(offset) + " (" +
                   invalid_byte_label(static_cast<uint8_t>(text[offset])) +
                   "); save the text as UTF-8");
}

struct CodePoint {
  char32_t cp;
  size_t begin;  // byte offset in the text
};

std::vector<CodePoint> decode_all(std::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const uint8_t b = static_cast<uint8_t>(text[pos]);
    if (b < 0x80) {
      out.push_back({b, pos++});
      continue;
    }
    const utf8::Decoded d = utf8::decode(text, pos);
    if (d.length == 0) throw_invalid_utf8(text, pos);
    out.push_back({d.code_point, pos});
    pos += d.length;
  }
  return out;
}

// Length of the contraction ('s 't 're 've 'm 'll 'd, lower case only) at i, 0 if none.
size_t contraction_length(const std::vector<CodePoint>& cps, size_t i) {
  if (cps[i].cp != '\'' || i + 1 >= cps.size()) return 0;
  const char32_t a = cps[i + 1].cp;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= cps.size()) return 0;
  const char32_t b = cps[i + 2].cp;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

char32_t gpt2_byte_to_unicode(uint8_t byte) { return byte_table().to_unicode[byte]; }

std::vector<std::pair<size_t, size_t>> gpt2_pretokenize(std::string_view text) {
  const std::vector<CodePoint> cps = decode_all(text);
  const size_t n = cps.size();
  std::vector<CharClass> cls(n);
  for (size_t i = 0; i < n; ++i) cls[i] = classify(cps[i].cp);
  const auto byte_at = [&](size_t i) { return i < n ? cps[i].begin : text.size(); };
  const auto run_end = [&](size_t i, CharClass c) {
    while (i < n && cls[i] == c) ++i;
    return i;
  };

  std::vector<std::pair<size_t, size_t>> pieces;
  size_t i = 0;
  while (i < n) {
    size_t end = 0;
    if (size_t len = contraction_length(cps, i)) {
      end = i + len;
    } else if (cls[i] != CharClass::Space) {  //  ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+
      end = run_end(i, cls[i]);
    } else if (cps[i].cp == ' ' && i + 1 < n && cls[i + 1] != CharClass::Space) {
      end = run_end(i + 1, cls[i + 1]);  // the optional leading space joins the run
    } else {
      // \s+(?!\S): the whitespace run, less its last character when a non-space follows (that
      // character then starts the next piece, e.g. " " before a word); \s+ when the run is a
      // single character followed by a non-space.
      const size_t run = run_end(i, CharClass::Space);
      end = (run < n && run - i > 1) ? run - 1 : run;
    }
    pieces.emplace_back(byte_at(i), byte_at(end));
    i = end;
  }
  return pieces;
}

Gpt2BpeTokenizer::Gpt2BpeTokenizer(const TokenizerConfig& config) {
  const ByteUnicodeTable& table = byte_table();
  if (config.vocab.empty())
    throw AtlasError("tokenizer (gpt2_bpe): the vocab is empty; it needs the 256 byte symbols "
                     "and the merged tokens of vocab.json");
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;  // symbol -> id
  ids.reserve(config.vocab.size());
  m_vocab_bytes.reserve(config.vocab.size());
  m_byte_ids.fill(-1);
  for (size_t i = 0; i < config.vocab.size(); ++i) {
    const std::string& entry = config.vocab[i];
    const size_t bad = utf8::find_invalid(entry);
    if (entry.empty() || bad != std::string_view::npos)
      throw AtlasError("tokenizer (gpt2_bpe): vocab entry " + std::to_string(i) +
                       (entry.empty() ? " is empty" : " is not valid UTF-8"));
    if (!ids.emplace(entry, static_cast<int32_t>(i)).second)
      throw AtlasError("tokenizer (gpt2_bpe): vocab entry " + std::to_string(i) +
                       " duplicates entry " + std::to_string(ids[entry]));
    // Map the byte-level characters back to bytes. An entry with other characters (an added
    // special token such as one with a real space) is kept as its own text: BPE never
    // produces it, but its label must still read.
    std::string bytes;
    bool byte_level = true;
    for (size_t p = 0; p < entry.size();) {
      const utf8::Decoded d = utf8::decode(entry, p);
      const int byte = table.byte_of(d.code_point);
      if (d.length == 0 || byte < 0) {
        byte_level = false;
        break;
      }
      bytes.push_back(static_cast<char>(byte));
      p += d.length;
    }
    if (!byte_level) bytes = entry;
    const bool special = entry.size() >= 4 && entry.rfind("<|", 0) == 0 &&
                         entry.compare(entry.size() - 2, 2, "|>") == 0;
    if (special) m_specials.emplace_back(entry, static_cast<int32_t>(i));
    if (byte_level && bytes.size() == 1) m_byte_ids[static_cast<uint8_t>(bytes[0])] = int32_t(i);
    m_vocab_bytes.push_back(std::move(bytes));
  }
  std::sort(m_specials.begin(), m_specials.end(), [](const auto& x, const auto& y) {
    return x.first.size() > y.first.size();  // longest match first
  });
  for (int b = 0; b < 256; ++b)
    if (m_byte_ids[b] < 0)
      throw AtlasError("tokenizer (gpt2_bpe): the vocab has no symbol for byte " +
                       invalid_byte_label(static_cast<uint8_t>(b)) + " (\"" +
                       utf8::encode(table.to_unicode[b]) +
                       "\"); a byte-level BPE vocab needs all 256, so any text can be encoded");

  m_merges = BpeMerges(
      config.merges,
      [&](std::string_view symbol) {
        const auto it = ids.find(symbol);
        return it == ids.end() ? -1 : it->second;
      },
      "tokenizer (gpt2_bpe): ");
}

std::vector<int32_t> Gpt2BpeTokenizer::merge_piece(std::string_view piece) const {
  std::vector<BpeMerges::Symbol> symbols;
  symbols.reserve(piece.size());
  for (const char c : piece) symbols.push_back({m_byte_ids[static_cast<uint8_t>(c)], 1});
  m_merges.apply(symbols);
  std::vector<int32_t> ids;
  ids.reserve(symbols.size());
  for (const BpeMerges::Symbol& sym : symbols) ids.push_back(sym.id);
  return ids;
}

void Gpt2BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& ids) const {
  constexpr size_t kMaxCachedPiece = 64, kMaxCacheEntries = 1 << 16;
  if (piece.size() > kMaxCachedPiece) {  // rare, and would bloat the cache
    const std::vector<int32_t> merged = merge_piece(piece);
    ids.insert(ids.end(), merged.begin(), merged.end());
    return;
  }
  {
    std::lock_guard lock(m_cache_mutex);
    if (const auto it = m_cache.find(piece); it != m_cache.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> merged = merge_piece(piece);
  ids.insert(ids.end(), merged.begin(), merged.end());
  std::lock_guard lock(m_cache_mutex);
  if (m_cache.size() >= kMaxCacheEntries) m_cache.clear();  // bounded memory on huge inputs
  m_cache.emplace(std::string(piece), std::move(merged));
}

std::vector<TokenInfo> Gpt2BpeTokenizer::encode(const std::string& text) const {
  if (const size_t bad = utf8::find_invalid(text); bad != std::string_view::npos)
    throw_invalid_utf8(text, bad);
  std::vector<TokenInfo> out;
  std::vector<int32_t> ids;
  const std::string_view all(text);
  // BPE of text[from, to), which holds no special token.
  const auto encode_span = [&](size_t from, size_t to) {
    for (const auto& [b, e] : gpt2_pretokenize(all.substr(from, to - from))) {
      ids.clear();
      encode_piece(all.substr(from + b, e - b), ids);
      size_t pos = from + b;
      for (const int32_t id : ids) {
        const size_t len = m_vocab_bytes[id].size();
        out.push_back({id, bytes_label(text, pos, pos + len)});
        pos += len;
      }
    }
  };
  // Special tokens written in the text ("<|endoftext|>") are that token, as in transformers'
  // GPT2Tokenizer; the text around them is encoded on its own.
  size_t from = 0;
  for (size_t at = all.find("<|"); at != std::string_view::npos && !m_specials.empty();
       at = all.find("<|", at + 1)) {
    for (const auto& [special, id] : m_specials) {
      if (all.compare(at, special.size(), special) != 0) continue;
      encode_span(from, at);
      out.push_back({id, special});
      from = at + special.size();
      at = from - 1;
      break;
    }
  }
  encode_span(from, text.size());
  return out;
}

std::string Gpt2BpeTokenizer::label(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= m_vocab_bytes.size())
    throw AtlasError("tokenizer: token id " + std::to_string(id) + " is out of range [0, " +
                     std::to_string(m_vocab_bytes.size()) + ")");
  const std::string& bytes = m_vocab_bytes[id];
  return bytes_label(bytes, 0, bytes.size());
}

}  // namespace atlas
