#pragma once
// Tokenizers of the foundation: UTF-8 bytes, characters with a vocab, whitespace words with a
// vocab and an unknown token; and those of Hugging Face checkpoints: GPT-2 byte-level BPE
// (bpe_tokenizer.h) and BERT WordPiece (wordpiece_tokenizer.h). Every label is valid UTF-8 so
// views can print it.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"
#include "core/model/trace.h"

namespace atlas {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Throws AtlasError (naming the byte offset) on input the tokenizer cannot represent.
  virtual std::vector<TokenInfo> encode(const std::string& text) const = 0;
  virtual std::string label(int32_t id) const = 0;  // readable, valid UTF-8
  virtual int64_t vocab_size() const = 0;
  // A sentence pair as one input (BERT: [CLS] a [SEP] b [SEP], TokenInfo::type 0 then 1).
  // Only tokenizers trained with pairs have it; the default throws an AtlasError saying so.
  virtual std::vector<TokenInfo> encode_pair(const std::string& a, const std::string& b) const;
};

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerConfig& config);

// The label of one character in the scheme of tokenizer.cpp ("␣" for a space, "⏎", "<U+200B>"
// for invisible ones, the character itself otherwise); shared by the Hugging Face tokenizers.
std::string display_char_label(char32_t code_point);
// The label of a continuation byte whose character sits on an earlier token: "·A9".
std::string continuation_byte_label(uint8_t byte);
// The label of a byte in no valid UTF-8 sequence: "<0xFF>".
std::string invalid_byte_label(uint8_t byte);
// The label of bytes [begin, end) of `s` as one token: a character sits on the token holding
// its first byte; continuation bytes whose character started before read "·A9"; bytes in no
// valid sequence "<0xFF>". `metaspace`: SentencePiece's "▁" is shown as a space ("␣").
std::string bytes_label(std::string_view s, size_t begin, size_t end, bool metaspace = false);

}  // namespace atlas
