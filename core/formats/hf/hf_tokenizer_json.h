#pragma once
// Internal to core/formats/hf/: the helpers the tokenizer-file readers share (every error names
// the file), and the reader of Llama-family tokenizer.json files (hf_llama_tokenizer.cpp).
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace atlas::hf_tokenizer {

namespace fs = std::filesystem;
using Json = nlohmann::json;

[[noreturn]] void fail(const fs::path& file, const std::string& problem);
// The file's text; `why` says, when it is missing, why it was wanted.
std::string read_text(const fs::path& file, const std::string& why);
// Whether an optional file (tokenizer_config.json, tokenizer.json beside vocab files) is given:
// any entry at the name counts, so a FIFO, folder or dangling link there is read, and refused
// by name, rather than silently passed over.
bool is_present(const fs::path& file);
// Files written by Python: a repeated key keeps the last, as json.load does.
Json parse_json(const fs::path& file, const std::string& text);
// token -> id object (vocab.json, tokenizer.json model.vocab) -> tokens by id, ids 0..N-1.
std::vector<std::string> vocab_from_object(const fs::path& file, const Json& object,
                                           const std::string& where);
// Checks "left right" merge rules against the vocab; `line_of(i)` names the rule in messages.
void check_merges(const fs::path& file, const std::vector<std::string>& merges,
                  const std::vector<std::string>& vocab,
                  const std::function<std::string(size_t)>& line_of);
// "[UNK]" or an AddedToken {"content": "[UNK]", ...}; "" for anything else.
std::string token_text(const Json& v);

// The tokenizer of a Llama-family checkpoint (llama, mistral, qwen2, gemma, phi3) from
// dir/tokenizer.json and, when present, dir/tokenizer_config.json: byte_level_bpe or
// sentencepiece_bpe as the file's pre-tokenizer and normalizer say. Anything else (another
// model type, normalizer, pre-tokenizer or split regex) is refused naming the file and it.
TokenizerConfig read_llama_family_tokenizer(const fs::path& dir, const std::string& model_type);

}  // namespace atlas::hf_tokenizer
