#pragma once
// The input-length check before the whole text is tokenized: a 63 MB text file used to become
// ~60 million TokenInfo entries (8.9 GB) before "more than max_positions tokens" was reported.
// The text is tokenized in chunks, cut just before whitespace, counting tokens, and refused as
// soon as the count passes the limit; memory stays bounded by one chunk.
#include <cstdint>
#include <string>

#include "core/tokenizers/tokenizer.h"

namespace atlas {

// Throws AtlasError "<what> has more than <max_tokens> tokens ..." when it clearly does. Texts
// short enough to need no chunking are left to the exact check after tokenization.
void check_token_budget(const Tokenizer& tokenizer, const std::string& text, int64_t max_tokens,
                        const std::string& what);

}  // namespace atlas
