#pragma once
// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata (llama.cpp's
// convert_hf_to_gguf.py writes it; gguf-py's constants name the keys), as a TokenizerConfig of
// the tokenizer.json kinds:
//   tokenizer.ggml.model "llama"  SentencePiece-style: tokens, scores, token_type; the merges
//                                 are derived from the scores (sentencepiece_bpe)
//   tokenizer.ggml.model "gpt2"   byte-level BPE: tokens, merges, token_type, and
//                                 tokenizer.ggml.pre naming llama.cpp's split rule
//                                 (byte_level_bpe; core/tokenizers/llamacpp_pretokenize.h)
// plus bos/eos/unknown token ids, add_bos_token/add_eos_token and add_space_prefix.
#include "core/config/config.h"
#include "core/formats/gguf.h"

namespace atlas {

// Throws AtlasError naming the file and the key at fault: a tokenizer model or pre-tokenizer
// this tool does not implement, arrays of different lengths, a token id out of range.
TokenizerConfig tokenizer_from_gguf(const GgufFile& file);

// SentencePiece BPE merges from scores: every split of a token into two tokens is a rule, and
// rules are ranked by the merged token's score, highest first (SentencePiece merges the pair
// whose concatenation scores highest). Ties keep token order, then the pieces' ids, as
// transformers' SentencePieceExtractor does, so the result matches a converted tokenizer.json.
std::vector<std::string> merges_from_scores(const std::vector<std::string>& tokens,
                                            const std::vector<double>& scores);

}  // namespace atlas
