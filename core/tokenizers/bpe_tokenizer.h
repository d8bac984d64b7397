#pragma once
// GPT-2's byte-level BPE (Radford et al. 2019, the `encoder.py` of openai/gpt-2): text is split
// by GPT-2's pre-tokenisation regex, each piece's UTF-8 bytes are mapped to printable
// characters (the byte-to-unicode table), and adjacent symbols are merged by the rank of their
// rule in merges.txt until no rule applies; the ids come from vocab.json.
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizers/bpe_merges.h"
#include "core/tokenizers/tokenizer.h"

namespace atlas {

// GPT-2's pre-tokenisation regex, implemented by hand (std::regex has neither \p{..} nor
// lookahead):  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with \s the White_Space property, as in the Python `regex` module GPT-2 uses.
// Returns the [begin, end) byte ranges of the pieces, which tile the text. Throws AtlasError
// naming the byte offset when the text is not valid UTF-8.
std::vector<std::pair<size_t, size_t>> gpt2_pretokenize(std::string_view text);

// GPT-2's bytes_to_unicode(): byte -> the printable code point that stands for it in vocab.json.
char32_t gpt2_byte_to_unicode(uint8_t byte);

class Gpt2BpeTokenizer final : public Tokenizer {
 public:
  // config.vocab: the byte-level strings of vocab.json by id; config.merges: "left right" by
  // rank. Throws AtlasError naming the entry at fault (a merge of unknown symbols, a vocab
  // entry that is not byte-level text, a byte with no symbol, ...).
  explicit Gpt2BpeTokenizer(const TokenizerConfig& config);

  std::vector<TokenInfo> encode(const std::string& text) const override;
  std::string label(int32_t id) const override;  // readable text of the token's bytes
  int64_t vocab_size() const override { return static_cast<int64_t>(m_vocab_bytes.size()); }

 private:
  // Appends the ids of one pre-tokenised piece (its raw bytes), through the cache.
  void encode_piece(std::string_view piece, std::vector<int32_t>& ids) const;
  std::vector<int32_t> merge_piece(std::string_view piece) const;

  std::vector<std::string> m_vocab_bytes;           // [vocab] the raw bytes each id stands for
  std::array<int32_t, 256> m_byte_ids{};            // byte -> id of its one-byte symbol
  BpeMerges m_merges;
  std::vector<std::pair<std::string, int32_t>> m_specials;  // "<|...|>" entries, matched whole
  mutable std::mutex m_cache_mutex;                 // encode is const and may run on threads
  struct PieceHash {  // lets the cache be searched with a string_view, without a copy
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  mutable std::unordered_map<std::string, std::vector<int32_t>, PieceHash, std::equal_to<>>
      m_cache;  // piece -> ids
};

}  // namespace atlas
