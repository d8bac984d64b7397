// Reading a Hugging Face checkpoint's tokenizer files (formats: transformers' GPT2Tokenizer,
// BertTokenizer and the `tokenizers` library's tokenizer.json). Every error names the file.
#include "core/formats/hf/hf_tokenizer_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/formats/hf/hf_tokenizer_json.h"
#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace hf_tokenizer {

[[noreturn]] void fail(const fs::path& file, const std::string& problem) {
  throw AtlasError(file.string() + ": " + problem);
}

std::string read_text(const fs::path& file, const std::string& why) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) fail(file, "missing; " + why);
  return read_input_file(file.string(), InputKind::TokenizerFile);
}

bool is_present(const fs::path& file) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(file, ec));
}

Json parse_json(const fs::path& file, const std::string& text) {
  try {
    return parse_json_text(text, "", JsonLimits{128, false});
  } catch (const AtlasError& e) {
    fail(file, std::string("is not valid JSON: ") + e.what());
  }
}

// Lines without their "\n" (and a "\r" before it); the empty piece after a final newline is
// not a line.
static std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;
    lines.push_back(text.substr(start, stop - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> vocab_from_object(const fs::path& file, const Json& object,
                                           const std::string& where) {
  if (!object.is_object())
    fail(file, where + " must be a JSON object mapping each token to its id");
  std::vector<std::string> vocab(object.size());
  std::vector<bool> seen(object.size(), false);
  for (const auto& [token, id] : object.items()) {
    if (!id.is_number_integer() && !id.is_number_unsigned())
      fail(file, where + ": the id of \"" + (utf8::is_valid(token) ? token : "?") +
                     "\" is not an integer");
    const int64_t i = id.get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= vocab.size())
      fail(file, where + ": id " + std::to_string(i) + " is outside 0.." +
                     std::to_string(vocab.size() - 1) + " (the ids must number the " +
                     std::to_string(vocab.size()) + " tokens without gaps)");
    if (seen[i]) fail(file, where + ": id " + std::to_string(i) + " is given to two tokens");
    seen[i] = true;
    vocab[i] = token;
  }
  if (vocab.empty()) fail(file, where + " is empty");
  return vocab;
}

void check_merges(const fs::path& file, const std::vector<std::string>& merges,
                  const std::vector<std::string>& vocab,
                  const std::function<std::string(size_t)>& line_of) {
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(vocab.size());
  for (size_t i = 0; i < vocab.size(); ++i) ids.emplace(vocab[i], int32_t(i));
  std::string merged;
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& rule = merges[r];
    const auto bad = [&](const std::string& problem) {
      fail(file, line_of(r) + " \"" + (utf8::is_valid(rule) ? rule : "?") + "\": " + problem);
    };
    const size_t space = rule.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == rule.size() ||
        rule.find(' ', space + 1) != std::string::npos)
      bad("expected two symbols separated by one space");
    const std::string_view left(rule.data(), space), right(rule.data() + space + 1,
                                                           rule.size() - space - 1);
    if (!ids.count(left)) bad("symbol \"" + std::string(left) + "\" is not in the vocab");
    if (!ids.count(right)) bad("symbol \"" + std::string(right) + "\" is not in the vocab");
    merged.assign(left).append(right);
    if (!ids.count(merged)) bad("the merged token \"" + merged + "\" is not in the vocab");
  }
}

std::string token_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  return {};
}

}  // namespace hf_tokenizer

namespace {

using namespace hf_tokenizer;

bool is_family(const std::string& model_type, const char* a, const char* b = nullptr) {
  return model_type == a || (b && model_type == b);
}

// A vocab of capitalised words belongs to a cased model: lower-casing the input would miss
// all of them. Used only when no file says do_lower_case.
bool looks_cased(const std::vector<std::string>& vocab) {
  size_t capitalised = 0;
  for (const std::string& t : vocab)
    if (t.size() > 1 && t[0] >= 'A' && t[0] <= 'Z' && t.back() != ']') ++capitalised;
  return capitalised * 20 > vocab.size();  // over 5%; an uncased vocab has none
}

void check_special_tokens(const fs::path& file, const TokenizerConfig& c) {
  for (const std::string* special : {&c.unk, &c.cls, &c.sep})
    if (std::find(c.vocab.begin(), c.vocab.end(), *special) == c.vocab.end())
      fail(file, "the vocab has no \"" + (utf8::is_valid(*special) ? *special : "?") +
                     "\"; BERT's special tokens (unknown, classification, separator) must be "
                     "in it");
}

TokenizerConfig read_tokenizer_json(const fs::path& file, const std::string& model_type) {
  const Json root = parse_json(file, read_text(file, ""));
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    fail(file, "has no \"model\" object (not a `tokenizers` tokenizer.json?)");
  const Json& model = root["model"];
  const std::string type = model.value("type", std::string());
  TokenizerConfig c;
  const auto get_vocab = [&] {
    if (!model.contains("vocab")) fail(file, "model.vocab is missing");
    return vocab_from_object(file, model["vocab"], "model.vocab");
  };
  if (is_family(model_type, "gpt2")) {
    if (type != "BPE")
      fail(file, "model.type is \"" + type + "\" but a gpt2 checkpoint needs \"BPE\"");
    c.kind = TokenizerKind::Gpt2Bpe;
    c.vocab = get_vocab();
    if (!model.contains("merges") || !model["merges"].is_array())
      fail(file, "model.merges must be an array of merge rules");
    for (const Json& m : model["merges"]) {
      if (m.is_string()) {
        c.merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        c.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        fail(file, "model.merges[" + std::to_string(c.merges.size()) +
                       "] must be \"left right\" or [\"left\", \"right\"]");
      }
    }
    check_merges(file, c.merges, c.vocab,
                 [](size_t r) { return "model.merges[" + std::to_string(r) + "]"; });
    return c;
  }
  if (type != "WordPiece")
    fail(file, "model.type is \"" + type + "\" but a " + model_type +
                   " checkpoint needs \"WordPiece\"");
  c.kind = TokenizerKind::WordPiece;
  c.vocab = get_vocab();
  c.unk = model.contains("unk_token") ? token_text(model["unk_token"]) : "[UNK]";
  if (model.value("continuing_subword_prefix", std::string("##")) != "##")
    fail(file, "model.continuing_subword_prefix is not \"##\"; only BERT's prefix is supported");
  if (model.contains("max_input_chars_per_word") &&
      model["max_input_chars_per_word"].is_number_integer())
    c.max_chars_per_word = model["max_input_chars_per_word"].get<int64_t>();
  c.lowercase = true;
  bool strip_set = false;
  if (root.contains("normalizer") && root["normalizer"].is_object()) {
    const Json& n = root["normalizer"];
    if (n.value("type", std::string()) != "BertNormalizer")
      fail(file, "normalizer.type is \"" + n.value("type", std::string()) +
                     "\"; only BertNormalizer is supported for " + model_type);
    if (n.contains("lowercase") && n["lowercase"].is_boolean()) c.lowercase = n["lowercase"];
    if (n.contains("strip_accents") && n["strip_accents"].is_boolean()) {
      c.strip_accents = n["strip_accents"];
      strip_set = true;
    }
  }
  if (!strip_set) c.strip_accents = c.lowercase;  // null: strip exactly when lower-casing
  if (root.contains("post_processor") && root["post_processor"].is_object()) {
    const Json& p = root["post_processor"];
    if (p.contains("cls") && p["cls"].is_array() && !p["cls"].empty())
      c.cls = token_text(p["cls"][0]);
    if (p.contains("sep") && p["sep"].is_array() && !p["sep"].empty())
      c.sep = token_text(p["sep"][0]);
  }
  check_special_tokens(file, c);
  return c;
}

TokenizerConfig read_gpt2_files(const fs::path& dir) {
  const std::string why = "a gpt2 checkpoint needs vocab.json and merges.txt (or tokenizer.json)";
  TokenizerConfig c;
  c.kind = TokenizerKind::Gpt2Bpe;
  const fs::path vocab_file = dir / "vocab.json";
  c.vocab = vocab_from_object(vocab_file,
                              parse_json(vocab_file, read_text(vocab_file, why)), "the vocab");
  const fs::path merges_file = dir / "merges.txt";
  const std::vector<std::string> lines = split_lines(read_text(merges_file, why));
  std::vector<size_t> line_numbers;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty() || (i == 0 && lines[i].rfind("#version", 0) == 0)) continue;
    c.merges.push_back(lines[i]);
    line_numbers.push_back(i + 1);
  }
  check_merges(merges_file, c.merges, c.vocab,
               [&](size_t r) { return "line " + std::to_string(line_numbers[r]); });
  return c;
}

TokenizerConfig read_bert_files(const fs::path& dir, const std::string& model_type) {
  TokenizerConfig c;
  c.kind = TokenizerKind::WordPiece;
  c.unk = "[UNK]";
  const fs::path vocab_file = dir / "vocab.txt";
  c.vocab = split_lines(read_text(
      vocab_file, "a " + model_type + " checkpoint needs vocab.txt (or tokenizer.json)"));
  if (c.vocab.empty()) fail(vocab_file, "is empty");
  for (size_t i = 0; i < c.vocab.size(); ++i)
    if (!utf8::is_valid(c.vocab[i]))
      fail(vocab_file, "line " + std::to_string(i + 1) + " is not valid UTF-8");
  c.lowercase = !looks_cased(c.vocab);  // transformers' default is true; see looks_cased
  bool strip_set = false;
  const fs::path config_file = dir / "tokenizer_config.json";
  if (is_present(config_file)) {
    const Json t = parse_json(config_file, read_text(config_file, ""));
    if (!t.is_object()) fail(config_file, "must be a JSON object");
    if (t.contains("do_lower_case")) {
      if (!t["do_lower_case"].is_boolean())
        fail(config_file, "do_lower_case must be true or false");
      c.lowercase = t["do_lower_case"];
    }
    if (t.contains("strip_accents") && !t["strip_accents"].is_null()) {
      if (!t["strip_accents"].is_boolean())
        fail(config_file, "strip_accents must be true, false or null");
      c.strip_accents = t["strip_accents"];
      strip_set = true;
    }
    for (const auto& [key, field] : {std::pair{"unk_token", &c.unk}, std::pair{"cls_token", &c.cls},
                                     std::pair{"sep_token", &c.sep}})
      if (t.contains(key) && !token_text(t[key]).empty()) *field = token_text(t[key]);
  }
  if (!strip_set) c.strip_accents = c.lowercase;
  check_special_tokens(vocab_file, c);
  return c;
}

}  // namespace

TokenizerConfig read_hf_tokenizer(const std::string& dir_name, const std::string& model_type,
                                  const std::string& hf_config_json) {
  const fs::path dir(dir_name);
  const bool llama_family = is_family(model_type, "llama", "mistral") ||
                            is_family(model_type, "qwen2", "gemma") || is_family(model_type, "phi3");
  if (!is_family(model_type, "gpt2") && !is_family(model_type, "bert", "distilbert") &&
      !llama_family)
    throw AtlasError(dir_name + ": no tokenizer for model_type \"" + model_type +
                     "\" (supported: gpt2, bert, distilbert, llama, mistral, qwen2, gemma, "
                     "phi3)");
  const fs::path json_file = dir / "tokenizer.json";
  const bool single_file = is_present(json_file) || llama_family;
  TokenizerConfig c;
  try {
    c = llama_family ? read_llama_family_tokenizer(dir, model_type)
        : single_file ? read_tokenizer_json(json_file, model_type)
        : model_type == "gpt2" ? read_gpt2_files(dir)
                               : read_bert_files(dir, model_type);
  } catch (const Json::exception& e) {  // a value of the wrong JSON type, e.g. "type": {}
    throw AtlasError((single_file ? json_file : dir).string() +
                     ": a tokenizer file holds a value of the wrong type: " + e.what());
  }
  // The embedding must have a row for every token id the tokenizer can produce.
  const fs::path config_file = dir / "config.json";
  const Json config = parse_json(config_file, hf_config_json);
  if (config.is_object() && config.contains("vocab_size") &&
      config["vocab_size"].is_number_integer()) {
    const int64_t rows = config["vocab_size"].get<int64_t>();
    if (static_cast<int64_t>(c.vocab.size()) > rows)
      fail(config_file, "vocab_size is " + std::to_string(rows) + " but the tokenizer has " +
                            std::to_string(c.vocab.size()) +
                            " tokens; the tokenizer files belong to another model");
  }
  return c;
}

}  // namespace atlas
