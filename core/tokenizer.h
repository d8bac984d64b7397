#pragma once
// Tokenizers of the foundation: UTF-8 bytes, characters with a vocab, whitespace words with a
// vocab and an unknown token. Every label is valid UTF-8 so views can print it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "trace.h"

namespace atlas {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Throws AtlasError (naming the byte offset) on input the tokenizer cannot represent.
  virtual std::vector<TokenInfo> encode(const std::string& text) const = 0;
  virtual std::string label(int32_t id) const = 0;  // readable, valid UTF-8
  virtual int64_t vocab_size() const = 0;
};

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerConfig& config);

}  // namespace atlas
