// tokenizer.ggml.* metadata into a TokenizerConfig. Token types (llama.cpp's llama_token_type):
// 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
#include "core/formats/gguf_tokenizer.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/tensor/error.h"
#include "core/tokenizers/llamacpp_pretokenize.h"
#include "core/tokenizers/utf8.h"

namespace atlas {
namespace {

constexpr int64_t kControl = 3, kUserDefined = 4, kByte = 6;

std::string quoted_token(const std::string& s) {
  return "\"" + (utf8::is_valid(s) ? s : "?") + "\"";
}

// Checks every token and lists the control and user-defined ones as added tokens: they are
// matched whole in the text, as the added tokens of tokenizer.json are.
void check_tokens(TokenizerConfig& c, const std::vector<int64_t>& types, const std::string& origin,
                  const std::string& tokens_name) {
  for (size_t i = 0; i < c.vocab.size(); ++i) {
    if (c.vocab[i].empty() || !utf8::is_valid(c.vocab[i]))
      throw AtlasError(origin + ": " + tokens_name + "[" + std::to_string(i) +
                       "] is empty or not valid UTF-8");
    if (types[i] == kControl || types[i] == kUserDefined)
      c.added_tokens.push_back(AddedToken{c.vocab[i]});
  }
}

}  // namespace

std::vector<std::string> merges_from_scores(const std::vector<std::string>& tokens,
                                            const std::vector<double>& scores) {
  std::unordered_map<std::string_view, int64_t> ids;
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i], int64_t(i));
  struct Rule {
    double score;
    int64_t left, right;
  };
  std::vector<Rule> rules;
  std::vector<Rule> local;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& token = tokens[t];
    local.clear();
    // Split points at character boundaries only: a piece is whole characters.
    for (size_t at = utf8::decode(token, 0).length; at > 0 && at < token.size();
         at += std::max<size_t>(1, utf8::decode(token, at).length)) {
      const auto l = ids.find(std::string_view(token).substr(0, at));
      const auto r = ids.find(std::string_view(token).substr(at));
      if (l != ids.end() && r != ids.end()) local.push_back({scores[t], l->second, r->second});
    }
    std::sort(local.begin(), local.end(), [](const Rule& a, const Rule& b) {
      return std::tie(a.left, a.right) < std::tie(b.left, b.right);
    });
    rules.insert(rules.end(), local.begin(), local.end());
  }
  std::stable_sort(rules.begin(), rules.end(),
                   [](const Rule& a, const Rule& b) { return a.score > b.score; });
  std::vector<std::string> merges;
  merges.reserve(rules.size());
  for (const Rule& r : rules) merges.push_back(tokens[size_t(r.left)] + " " + tokens[size_t(r.right)]);
  return merges;
}

TokenizerConfig tokenizer_from_gguf(const GgufFile& file) {
  const std::string& origin = file.origin();
  const auto fail = [&](const std::string& problem) -> void {
    throw AtlasError(origin + ": " + problem);
  };
  if (!file.has("tokenizer.ggml.model"))
    fail("no tokenizer.ggml.model: the file carries no tokenizer");
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model != "llama" && model != "gpt2")
    fail("tokenizer.ggml.model " + quoted_token(model) +
         " is not supported (supported: \"llama\" (SentencePiece BPE), \"gpt2\" (byte-level "
         "BPE))");
  TokenizerConfig c;
  const LlamaCppPreType* pre_type = nullptr;  // "gpt2" vocabularies only
  c.vocab = file.get_string_array("tokenizer.ggml.tokens");
  const size_t n = c.vocab.size();
  if (n == 0) fail("tokenizer.ggml.tokens is empty");
  std::vector<int64_t> types(n, 1);
  if (file.has("tokenizer.ggml.token_type")) {
    types = file.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n)
      fail("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
           " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  const auto token_of = [&](const char* key) -> std::string {
    const int64_t id = file.get_int(key);
    if (id < 0 || size_t(id) >= n)
      fail(std::string(key) + " " + std::to_string(id) + " is outside the " + std::to_string(n) +
           " tokens");
    return c.vocab[size_t(id)];
  };

  if (model == "llama") {
    SpmVocab v;
    v.scores = file.get_float_array("tokenizer.ggml.scores");
    if (v.scores.size() != n)
      fail("tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
           " entries but tokenizer.ggml.tokens has " + std::to_string(n));
    if (file.has("tokenizer.ggml.unknown_token_id")) {
      token_of("tokenizer.ggml.unknown_token_id");  // checks the range
      v.unk_id = file.get_int("tokenizer.ggml.unknown_token_id");
    }
    v.add_space_prefix = !file.has("tokenizer.ggml.add_space_prefix") ||
                         file.get_bool("tokenizer.ggml.add_space_prefix");
    v.tokens = std::move(c.vocab);
    v.types = std::move(types);
    c = spm_tokenizer_config(std::move(v), origin, "tokenizer.ggml.tokens");
  } else {
    check_tokens(c, types, origin, "tokenizer.ggml.tokens");
    c.kind = TokenizerKind::ByteLevelBpe;
    c.merges = file.get_string_array("tokenizer.ggml.merges");
    // llama.cpp's pre types: "default" and a missing key are its default rule.
    const std::string pre = file.get_string_or("tokenizer.ggml.pre", "");
    pre_type = find_llamacpp_pre_type(pre);
    if (pre_type == nullptr)
      fail("tokenizer.ggml.pre " + quoted_token(pre) +
           " is not a pre-tokenizer this tool can run (supported, as llama.cpp names them: " +
           llamacpp_pre_type_names() + "; a missing key means \"default\")");
    c.split_regex = pre_type->rule;
    c.ignore_merges = pre_type->ignore_merges;
    c.nfc = pre == "qwen2";  // Qwen2's tokenizer.json normalizes to NFC (llama.cpp does not)
    c.unk = "";
  }
  // BOS/EOS: without add_bos_token llama.cpp adds the BOS for "llama" vocabularies and for
  // the pre types it marks (llama3, tekken, chameleon).
  const bool add_bos = file.has("tokenizer.ggml.add_bos_token")
                           ? file.get_bool("tokenizer.ggml.add_bos_token")
                           : model == "llama" || (pre_type != nullptr && pre_type->add_bos);
  const bool add_eos = file.has("tokenizer.ggml.add_eos_token") &&
                       file.get_bool("tokenizer.ggml.add_eos_token");
  for (const auto& [add, key, slot] : {std::tuple{add_bos, "tokenizer.ggml.bos_token_id", &c.bos},
                                       std::tuple{add_eos, "tokenizer.ggml.eos_token_id", &c.eos}}) {
    if (!add) continue;
    if (!file.has(key)) fail(std::string(key) + " is missing, but the file asks for the token");
    *slot = token_of(key);
  }
  return c;
}

TokenizerConfig spm_tokenizer_config(SpmVocab v, const std::string& origin,
                                     const std::string& tokens_name) {
  const size_t n = v.tokens.size();
  if (n == 0) throw AtlasError(origin + ": " + tokens_name + " is empty");
  if (v.scores.size() != n || v.types.size() != n)
    throw AtlasError(origin + ": " + tokens_name + " has " + std::to_string(n) +
                     " tokens but " + std::to_string(v.scores.size()) + " scores and " +
                     std::to_string(v.types.size()) + " types");
  if (v.unk_id >= int64_t(n))
    throw AtlasError(origin + ": the unknown token id " + std::to_string(v.unk_id) +
                     " is outside the " + std::to_string(n) + " tokens");
  TokenizerConfig c;
  c.kind = TokenizerKind::SentencePieceBpe;
  c.vocab = std::move(v.tokens);
  check_tokens(c, v.types, origin, tokens_name);
  c.merges = merges_from_scores(c.vocab, v.scores);
  c.byte_fallback = std::find(v.types.begin(), v.types.end(), kByte) != v.types.end();
  c.unk = v.unk_id >= 0 ? c.vocab[size_t(v.unk_id)] : "";
  // llama.cpp puts a space before the text and after every special token: the older
  // tokenizer.json files' Prepend.
  c.space_prefix = v.add_space_prefix ? SpacePrefix::Prepend : SpacePrefix::None;
  if (c.unk.empty() && !c.byte_fallback)
    throw AtlasError(origin + ": a SentencePiece vocabulary with neither byte tokens nor an "
                              "unknown token cannot encode a character missing from its vocab");
  return c;
}

}  // namespace atlas
