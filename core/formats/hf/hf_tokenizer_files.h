#pragma once
// Reads the tokenizer files of a Hugging Face model directory into a TokenizerConfig
//, so the checkpoint's own vocabulary tokenizes the text:
//   gpt2                vocab.json (token -> id) + merges.txt (one "left right" rule a line)
//   bert, distilbert    vocab.txt (one token a line, id = line number), with do_lower_case /
//                       strip_accents from tokenizer_config.json when present (default:
//                       lower-case, accents stripped when lower-casing, as transformers does)
//   llama, mistral,     tokenizer.json (+ tokenizer_config.json for add_bos_token), as
//   qwen2, gemma, phi3  byte_level_bpe (Llama 3, Qwen2) or sentencepiece_bpe (Llama 2,
//                       Mistral, Gemma, Phi-3): core/formats/hf/hf_llama_tokenizer.cpp; without
//                       tokenizer.json, SentencePiece's tokenizer.model (BPE models only:
//                       core/formats/hf/sentencepiece_model.h)
// When the directory has tokenizer.json (the `tokenizers` library's single file) it is read
// instead, because it is what transformers itself prefers.
// Throws AtlasError naming the missing or malformed file and the problem.
#include <string>

#include "core/config/config.h"

namespace atlas {

// `model_type` is config.json's "model_type" ("gpt2", "bert", "llama", ...);
// `hf_config_json` is the text of config.json (its vocab_size is checked against the vocab).
TokenizerConfig read_hf_tokenizer(const std::string& dir, const std::string& model_type,
                                  const std::string& hf_config_json);

}  // namespace atlas
