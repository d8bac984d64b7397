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

// A SentencePiece-style vocabulary as a GGUF "llama" file and SentencePiece's own
// tokenizer.model (core/formats/hf/sentencepiece_model.h) carry it. Token types are
// llama.cpp's llama_token_type, which are SentencePiece's piece types: 1 normal, 2 unknown,
// 3 control, 4 user-defined, 5 unused, 6 byte.
struct SpmVocab {
  std::vector<std::string> tokens;
  std::vector<double> scores;   // one per token
  std::vector<int64_t> types;   // one per token
  int64_t unk_id = -1;          // the unknown token; -1: none
  bool add_space_prefix = true;  // "▁" before the text and after every special token
};

// The sentencepiece_bpe TokenizerConfig of a vocabulary, without BOS/EOS (the caller's): merges
// from the scores, byte fallback when there are byte tokens, control and user-defined tokens
// matched whole. Throws AtlasError "<origin>: ..." naming `tokens_name` (the key or field the
// tokens came from) for an empty or invalid token, or when a character missing from the vocab
// could not be encoded (no byte tokens, no unknown token).
TokenizerConfig spm_tokenizer_config(SpmVocab v, const std::string& origin,
                                     const std::string& tokens_name);

// SentencePiece BPE merges from scores: every split of a token into two tokens is a rule, and
// rules are ranked by the merged token's score, highest first (SentencePiece merges the pair
// whose concatenation scores highest). Ties keep token order, then the pieces' ids, as
// transformers' SentencePieceExtractor does, so the result matches a converted tokenizer.json.
std::vector<std::string> merges_from_scores(const std::vector<std::string>& tokens,
                                            const std::vector<double>& scores);

}  // namespace atlas
