#pragma once
// BERT's tokenizer (Devlin et al. 2019; google-research/bert tokenization.py, as in
// transformers' BertTokenizer): the basic tokenizer (clean text, split CJK characters, split
// on whitespace and punctuation, optionally lower-case and strip accents) and then WordPiece,
// greedy longest-match-first with "##" marking a piece that continues a word.
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizers/tokenizer.h"

namespace atlas {

// The basic tokenizer alone: the words WordPiece then splits. Throws AtlasError naming the
// byte offset when the text is not valid UTF-8.
std::vector<std::string> bert_basic_tokenize(std::string_view text, bool lowercase,
                                             bool strip_accents);

class WordPieceTokenizer final : public Tokenizer {
 public:
  // config.vocab: the lines of vocab.txt by id; unk, cls and sep must be in it.
  explicit WordPieceTokenizer(const TokenizerConfig& config);

  // [CLS] text [SEP], all of token type 0. Special tokens in the text ([MASK], [SEP], ...)
  // are kept whole.
  std::vector<TokenInfo> encode(const std::string& text) const override;
  // [CLS] a [SEP] b [SEP]: type 0 up to the first [SEP], 1 after it.
  std::vector<TokenInfo> encode_pair(const std::string& a, const std::string& b) const override;
  std::string label(int32_t id) const override;  // the vocab entry: "##ing" as is
  int64_t vocab_size() const override { return static_cast<int64_t>(m_vocab.size()); }

  // The wordpieces of one word of the basic tokenizer (unk alone when it cannot be split).
  void append_wordpieces(const std::string& word, int32_t type,
                         std::vector<TokenInfo>& out) const;

 private:
  void append_text(const std::string& text, int32_t type, std::vector<TokenInfo>& out) const;
  void append_special(int32_t id, int32_t type, std::vector<TokenInfo>& out) const;

  std::vector<std::string> m_vocab;
  std::unordered_map<std::string, int32_t> m_ids;
  int32_t m_unk = 0, m_cls = 0, m_sep = 0;
  std::vector<std::pair<std::string, int32_t>> m_specials;  // kept whole when typed in text
  bool m_lowercase = true, m_strip_accents = true;
  size_t m_max_chars_per_word = 100;
};

}  // namespace atlas
