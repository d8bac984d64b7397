#pragma once
// The pre-tokenisation regexes of Llama-family byte-level BPE tokenizers, implemented by hand
// (std::regex has neither \p{..} nor lookahead), as gpt2_pretokenize does for GPT-2's:
//   Llama 3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//             ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:    the same with \p{N} (one digit a piece) instead of \p{N}{1,3}
// \s is the White_Space property and \p{L}, \p{N} the general categories, as in the regex
// engines the `tokenizers` library and tiktoken use. The pattern strings are kept here too, so
// the tokenizer.json reader recognises a file's Split pattern by comparing it.
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/config.h"

namespace atlas {

// The Split pre-tokenizer pattern strings of tokenizer.json, exactly as the files hold them.
extern const std::string_view kLlama3SplitPattern;
extern const std::string_view kQwen2SplitPattern;
extern const std::string_view kGpt2SplitPattern;

// The [begin, end) byte ranges of the pieces, which tile `text`. The text must be valid UTF-8
// (callers check; an invalid byte is read as a character of class "other"). `ascii_contractions`:
// llama.cpp's '[sS]|'[tT].. in place of (?i:'s|'t..), which also takes "'ſ" (U+017F).
std::vector<std::pair<size_t, size_t>> llama3_pretokenize(std::string_view text,
                                                          bool single_digits,
                                                          bool ascii_contractions = false);

// Dispatch on the config's choice (Gpt2 uses gpt2_pretokenize of bpe_tokenizer.h, the LlamaCpp
// rules llamacpp_pretokenize of llamacpp_pretokenize.h).
std::vector<std::pair<size_t, size_t>> split_pretokenize(SplitRegex regex, std::string_view text);

}  // namespace atlas
