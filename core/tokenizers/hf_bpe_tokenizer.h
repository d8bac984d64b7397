#pragma once
// The BPE tokenizers of Llama-family tokenizer.json files (the `tokenizers` library's
// pipeline: added tokens, normalizer, pre-tokenizer, BPE model, post-processor), in the two
// forms these checkpoints use:
//   byte_level_bpe     Llama 3, Qwen2: the text is split by a regex (hf_pretokenize.h), each
//                      piece's UTF-8 bytes are mapped through GPT-2's bytes_to_unicode and
//                      merged by rank; every byte has a token, so nothing is unknown.
//   sentencepiece_bpe  Llama 2, Mistral, TinyLlama, Gemma, Phi-3: spaces become "▁" (with a
//                      leading "▁" as the file says), the characters are merged by rank; a
//                      character not in the vocab becomes its UTF-8 bytes as "<0x41>" tokens
//                      (byte_fallback) or the unknown token.
// In both, added tokens (<s>, <|begin_of_text|>, <|im_start|>) are cut out of the text first,
// and the BOS/EOS of the post-processor or tokenizer_config.json is put around the result.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/tokenizers/bpe_merges.h"
#include "core/tokenizers/tokenizer.h"

namespace atlas {

class HfBpeTokenizer final : public Tokenizer {
 public:
  // config.kind is ByteLevelBpe or SentencePieceBpe. Throws AtlasError naming the entry at
  // fault: a merge of unknown symbols, a byte with no symbol, an added token, BOS or EOS that
  // is not in the vocab, a missing unknown token.
  explicit HfBpeTokenizer(const TokenizerConfig& config);

  std::vector<TokenInfo> encode(const std::string& text) const override;
  std::string label(int32_t id) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(m_vocab.size()); }

  using Symbol = BpeMerges::Symbol;
  // An added token as matched: its pattern (the content, normalized when the token is), id.
  struct Matcher {
    std::string pattern;
    int32_t id;
    AddedToken token;
  };

 private:
  struct StringHash {  // lookups by string_view without a copy
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  void check_vocab_and_merges(const TokenizerConfig& config);
  int32_t require_id(const std::string& token, const std::string& what) const;
  // The normalizer of the file: NFC (byte_level_bpe) or Prepend + Replace (sentencepiece_bpe).
  std::string normalize(std::string_view text) const;
  // Appends the tokens of `piece` (normalized text free of added tokens); `at_start`: it
  // begins at offset 0 of the input (Metaspace "first").
  void encode_normalized(std::string_view piece, bool at_start, std::vector<TokenInfo>& out) const;
  void encode_byte_level(std::string_view piece, std::vector<TokenInfo>& out) const;
  void encode_sentencepiece(std::string_view word, std::vector<TokenInfo>& out) const;

  const char* m_kind;  // for messages
  TokenizerConfig m_config;  // the choices (vocab and merges moved out into the tables below)
  std::vector<std::string> m_vocab;  // [vocab] the strings of tokenizer.json
  IdMap m_ids;
  BpeMerges m_merges;
  std::array<int32_t, 256> m_byte_ids{};  // byte_level: the byte's symbol; sentencepiece: "<0xXX>"
  std::unordered_set<int32_t> m_added_ids;  // their labels are their text
  std::vector<Matcher> m_raw_matchers, m_normalized_matchers;
  std::array<std::vector<uint32_t>, 256> m_raw_by_byte, m_normalized_by_byte;  // first byte ->
  int32_t m_unk = -1, m_bos = -1, m_eos = -1;
};

}  // namespace atlas
