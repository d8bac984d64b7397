#pragma once
// The pre-tokenizers llama.cpp runs for a GGUF file's byte-level BPE vocabulary
// (tokenizer.ggml.model "gpt2"): tokenizer.ggml.pre names one, llama_vocab::impl::load maps
// the name to a LLAMA_VOCAB_PRE_TYPE_*, and llm_tokenizer_bpe's constructor gives each type a
// list of split patterns (src/llama-vocab.cpp). "default" and a missing key are its default
// rule, not an error.
//
// Here the rules are llama.cpp's own pattern strings, run by SplitPattern (split_pattern.h),
// except where a hand-written splitter already gives the same pieces faster:
//   gpt2          gpt2_pretokenize (bpe_tokenizer.h): llama.cpp's GPT-2 pattern lacks the final
//                 "|\s+", but a lone whitespace it leaves unmatched is a piece on its own anyway
//   llama3, qwen2 llama3_pretokenize (hf_pretokenize.h) with ASCII-only contractions
//                 ('[sS] .. '[dD]), as llama.cpp writes them, not tokenizer.json's (?i:'s ..)
// Pre types whose patterns need \p{M} or \p{S}, or custom code in llama.cpp (kimi-k2, afmoe,
// superbpe, gemma4's unencoded bytes, whitespace, an appended SEP) are not among them.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/config.h"

namespace atlas {

struct LlamaCppPreType {
  std::string_view name;  // the tokenizer.ggml.pre value
  SplitRegex rule;
  bool ignore_merges = false;  // llama.cpp looks a piece up whole before merging
  bool add_bos = false;        // llama.cpp's add_bos when tokenizer.ggml.add_bos_token is absent
};

// The entry for a tokenizer.ggml.pre value ("" = the key is missing: the default rule), or
// nullptr when llama.cpp has no such name or Atlas cannot run its rule.
const LlamaCppPreType* find_llamacpp_pre_type(std::string_view name);

// Every accepted name, quoted and comma-separated, for error messages.
std::string llamacpp_pre_type_names();

// llama.cpp's pattern strings for a rule, in the order they run (also for the rules split by
// hand, so tests can hold the two against each other). Empty for a rule that is not llama.cpp's.
const std::vector<std::string_view>& llamacpp_split_patterns(SplitRegex rule);

// The [begin, end) byte ranges of the pieces of `text` under a llama.cpp rule.
std::vector<std::pair<size_t, size_t>> llamacpp_pretokenize(SplitRegex rule, std::string_view text);

}  // namespace atlas
