// Strict config.json parser (schema: docs/model-format.md). Every key is optional, but
// nothing is ignored: an unknown key, a duplicate key, a wrong type or an out-of-range value
// is an error naming the origin and the key, because a silently dropped typo would show the
// user a different model from the one they described.
#include "core/config/config.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "core/config/config_json.h"
#include "core/config/config_limits.h"
#include "core/config/variant_choices.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"

namespace atlas {
namespace config_json {

constexpr size_t kMaxDepth = 64;  // a config needs 3; the cap keeps hostile input shallow
constexpr double kMaxParameters = 20e9;

const std::vector<std::string> kTopKeys = {
    "name",          "description",    "architecture",    "tokenizer",      "vocab_size",
    "d_model",       "n_heads",        "d_ff",            "n_layers",       "n_decoder_layers",
    "max_positions", "positional",     "sinusoid_layout", "scale_embedding", "norm",
    "norm_position", "norm_eps",       "fixnorm",         "activation",     "attention_bias",
    "ffn_bias",      "output",         "pad_id",          "bos_id",         "seed",
    "init_std"};
const std::vector<std::string> kTokenizerKeys = {"type", "vocab", "unk", "lowercase", "merges",
    "strip_accents", "cls", "sep", "max_chars_per_word", "split_regex", "nfc", "space_prefix",
    "metaspace_split", "byte_fallback", "ignore_merges", "added_tokens", "bos", "eos"};
const std::vector<std::string> kAddedTokenKeys = {"content", "lstrip", "rstrip", "single_word",
    "normalized"};


const EnumTable<Architecture> kArchitectures = {{"encoder", Architecture::Encoder},
    {"decoder", Architecture::Decoder}, {"encoder-decoder", Architecture::EncoderDecoder}};
const EnumTable<Positional> kPositionals = {{"none", Positional::None},
    {"sinusoidal", Positional::Sinusoidal}, {"learned", Positional::Learned},
    {"rotary", Positional::Rotary}};
const EnumTable<SinusoidLayout> kLayouts = {{"interleaved", SinusoidLayout::Interleaved},
    {"concatenated", SinusoidLayout::Concatenated}};
const EnumTable<NormKind> kNorms = {{"layernorm", NormKind::LayerNorm},
    {"scalenorm", NormKind::ScaleNorm}, {"rmsnorm", NormKind::RmsNorm}};
const EnumTable<NormPosition> kNormPositions = {{"post", NormPosition::Post},
    {"pre", NormPosition::Pre}};
const EnumTable<FfnActivation> kActivations = {{"relu", FfnActivation::ReLU},
    {"gelu", FfnActivation::Gelu}, {"gelu_tanh", FfnActivation::GeluTanh},
    {"silu", FfnActivation::Silu}};
const EnumTable<OutputHead> kOutputs = {{"tied", OutputHead::Tied},
    {"untied", OutputHead::Untied}, {"none", OutputHead::None}};
const EnumTable<TokenizerKind> kTokenizerKinds = {{"bytes", TokenizerKind::Bytes},
    {"chars", TokenizerKind::Chars}, {"words", TokenizerKind::Words},
    {"gpt2_bpe", TokenizerKind::Gpt2Bpe}, {"wordpiece", TokenizerKind::WordPiece},
    {"labels", TokenizerKind::Labels}, {"byte_level_bpe", TokenizerKind::ByteLevelBpe},
    {"sentencepiece_bpe", TokenizerKind::SentencePieceBpe}};
const EnumTable<SplitRegex> kSplitRegexes = {{"llama3", SplitRegex::Llama3},
    {"qwen2", SplitRegex::Qwen2}, {"gpt2", SplitRegex::Gpt2},
    {"llamacpp_default", SplitRegex::LlamaCppDefault},
    {"llamacpp_llama3", SplitRegex::LlamaCppLlama3}, {"llamacpp_qwen2", SplitRegex::LlamaCppQwen2},
    {"llamacpp_starcoder", SplitRegex::LlamaCppStarcoder},
    {"llamacpp_falcon", SplitRegex::LlamaCppFalcon},
    {"llamacpp_deepseek_llm", SplitRegex::LlamaCppDeepseekLlm},
    {"llamacpp_deepseek_coder", SplitRegex::LlamaCppDeepseekCoder},
    {"llamacpp_bloom", SplitRegex::LlamaCppBloom}, {"llamacpp_viking", SplitRegex::LlamaCppViking},
    {"llamacpp_tekken", SplitRegex::LlamaCppTekken},
    {"llamacpp_chameleon", SplitRegex::LlamaCppChameleon},
    {"llamacpp_gpt4o", SplitRegex::LlamaCppGpt4o}, {"llamacpp_jais2", SplitRegex::LlamaCppJais2},
    {"llamacpp_seed_coder", SplitRegex::LlamaCppSeedCoder},
    {"llamacpp_ufakzeka", SplitRegex::LlamaCppUfakzeka},
    {"llamacpp_laguna", SplitRegex::LlamaCppLaguna},
    {"llamacpp_bailingmoe", SplitRegex::LlamaCppBailingMoe},
    {"llamacpp_minicpm5", SplitRegex::LlamaCppMiniCpm5}};
const EnumTable<SpacePrefix> kSpacePrefixes = {{"none", SpacePrefix::None},
    {"prepend", SpacePrefix::Prepend}, {"first", SpacePrefix::First},
    {"always", SpacePrefix::Always}};

bool is_tokenizer_json_kind(TokenizerKind kind) {
  return kind == TokenizerKind::ByteLevelBpe || kind == TokenizerKind::SentencePieceBpe;
}

[[noreturn]] void fail(const std::string& origin, const std::string& message) {
  throw AtlasError(origin + ": " + message);
}

size_t utf8_length(std::string_view s, size_t pos) { return utf8_sequence_length(s, pos); }
std::string sanitize(std::string_view s) { return escape_invalid_utf8(s); }
bool utf8_valid(std::string_view s) { return sanitize(s) == s; }

// A key or value as the user would type it in JSON: quoted, control characters escaped.
std::string quote(const std::string& s) {
  return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + quote(w);
  return out;
}

Json parse_json(const std::string& text, const std::string& origin) {
  return parse_json_text(text, origin, JsonLimits{kMaxDepth, true});
}

// ---- typed reads ------------------------------------------------------------------------

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    case Json::value_t::binary: return "binary";
    default: return "number";
  }
}

// "got 512.5" for a number, "got string" for anything else: the value itself is the more
// useful hint when the type was right but the value was not.
std::string got(const Json& v) {
  return "got " + (v.is_number() ? v.dump() : type_name(v));
}

void check_known_keys(const Json& object, const std::vector<std::string>& known,
                      const std::string& what, const std::string& origin) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string hint = nearest(key, known);
    std::string message = "unknown " + what + " key " + quote(key);
    if (!hint.empty()) message += "; did you mean " + quote(hint) + "?";
    else message += "; known keys: " + join_quoted(known);
    fail(origin, message);
  }
}

std::vector<std::string> split_code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::max<size_t>(1, utf8_length(s, i));  // invalid bytes: validate reports them
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// A GPT-2 tokenizer holds 50k vocab entries and 50k merges: the element's key for an error
// message is formatted only when the element is not a string.
void read_string_array(const Json& a, const Reader& r, const char* key,
                       std::vector<std::string>& out) {
  out.clear();
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Json& v = a[i];
    if (!v.is_string()) r.string(v, std::string(key) + "[" + std::to_string(i) + "]");  // throws
    out.push_back(v.get_ref<const std::string&>());
  }
}

void read_tokenizer(const Json& t, const Reader& r, TokenizerConfig& out) {
  if (auto it = t.find("type"); it != t.end())
    out.kind = r.enumeration(*it, "tokenizer.type", kTokenizerKinds);
  if (auto it = t.find("vocab"); it != t.end()) {
    const Json& v = *it;
    if (v.is_string()) {
      // A character vocab is naturally written as one string ("abc..."), one entry per
      // code point; for words it would be ambiguous, so only chars accepts it.
      if (out.kind != TokenizerKind::Chars)
        fail(r.origin, "tokenizer.vocab may be a single string only for type \"chars\"; "
                       "give an array of strings");
      out.vocab = split_code_points(v.get<std::string>());
    } else if (v.is_array()) {
      read_string_array(v, r, "tokenizer.vocab", out.vocab);
    } else {
      fail(r.origin, "tokenizer.vocab must be an array of strings, " + got(v));
    }
  }
  if (auto it = t.find("unk"); it != t.end()) out.unk = r.string(*it, "tokenizer.unk");
  if (auto it = t.find("lowercase"); it != t.end())
    out.lowercase = r.boolean(*it, "tokenizer.lowercase");
  if (out.kind == TokenizerKind::WordPiece && t.find("unk") == t.end()) out.unk = "[UNK]";
  if (auto it = t.find("merges"); it != t.end()) {
    if (!it->is_array())
      fail(r.origin, "tokenizer.merges must be an array of strings, " + got(*it));
    read_string_array(*it, r, "tokenizer.merges", out.merges);
  }
  if (auto it = t.find("strip_accents"); it != t.end())
    out.strip_accents = r.boolean(*it, "tokenizer.strip_accents");
  if (auto it = t.find("cls"); it != t.end()) out.cls = r.string(*it, "tokenizer.cls");
  if (auto it = t.find("sep"); it != t.end()) out.sep = r.string(*it, "tokenizer.sep");
  if (auto it = t.find("max_chars_per_word"); it != t.end())
    out.max_chars_per_word = r.integer(*it, "tokenizer.max_chars_per_word");
  if (auto it = t.find("split_regex"); it != t.end())
    out.split_regex = r.enumeration(*it, "tokenizer.split_regex", kSplitRegexes);
  if (auto it = t.find("nfc"); it != t.end()) out.nfc = r.boolean(*it, "tokenizer.nfc");
  if (auto it = t.find("space_prefix"); it != t.end())
    out.space_prefix = r.enumeration(*it, "tokenizer.space_prefix", kSpacePrefixes);
  if (auto it = t.find("metaspace_split"); it != t.end())
    out.metaspace_split = r.boolean(*it, "tokenizer.metaspace_split");
  if (auto it = t.find("byte_fallback"); it != t.end())
    out.byte_fallback = r.boolean(*it, "tokenizer.byte_fallback");
  if (auto it = t.find("ignore_merges"); it != t.end())
    out.ignore_merges = r.boolean(*it, "tokenizer.ignore_merges");
  if (auto it = t.find("added_tokens"); it != t.end()) {
    if (!it->is_array())
      fail(r.origin, "tokenizer.added_tokens must be an array of strings or objects, " +
                         got(*it));
    out.added_tokens.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      // A plain string is a token with every flag off, the common case; an object gives flags.
      const Json& v = (*it)[i];
      const std::string key = "tokenizer.added_tokens[" + std::to_string(i) + "]";
      AddedToken token;
      if (v.is_string()) {
        token.content = v.get<std::string>();
      } else if (v.is_object()) {
        check_known_keys(v, kAddedTokenKeys, key, r.origin);
        if (!v.contains("content")) fail(r.origin, key + " has no \"content\"");
        token.content = r.string(v["content"], key + ".content");
        for (auto [name, flag] : {std::pair{"lstrip", &token.lstrip},
                                  std::pair{"rstrip", &token.rstrip},
                                  std::pair{"single_word", &token.single_word},
                                  std::pair{"normalized", &token.normalized}})
          if (v.contains(name)) *flag = r.boolean(v[name], key + "." + name);
      } else {
        fail(r.origin, key + " must be a string or an object, " + got(v));
      }
      out.added_tokens.push_back(std::move(token));
    }
  }
  if (auto it = t.find("bos"); it != t.end()) out.bos = r.string(*it, "tokenizer.bos");
  if (auto it = t.find("eos"); it != t.end()) out.eos = r.string(*it, "tokenizer.eos");
}

// ---- validation helpers -----------------------------------------------------------------

std::string format_float(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(f));
  return buf;
}

void check_range(int64_t value, int64_t lo, int64_t hi, const std::string& key,
                 const std::string& origin) {
  if (value < lo)
    fail(origin, key + " must be >= " + std::to_string(lo) + ", got " + std::to_string(value));
  if (value > hi)
    fail(origin, key + " " + std::to_string(value) +
                     " is larger than this tool supports (at most " + std::to_string(hi) + ")");
}

// Rough weight count: embeddings, learned positions, untied output, and per layer the four
// attention projections (4 d^2) plus the two FFN matrices (2 d d_ff); a decoder layer of an
// encoder-decoder model adds cross-attention (another 4 d^2). Biases and norms are O(d) and
// ignored. Doubles, because the product of individually legal sizes overflows nothing there.
double estimate_parameters(const ModelConfig& c) {
  double d = static_cast<double>(c.d_model), f = static_cast<double>(c.d_ff);
  double vocab = static_cast<double>(c.vocab_size);
  double total = vocab * d;
  if (c.output == OutputHead::Untied) total += vocab * d;
  if (c.positional == Positional::Learned) total += static_cast<double>(c.max_positions) * d;
  total += static_cast<double>(c.embeddings.patches.features()) * d;  // ViT patch projection
  const double kv = static_cast<double>(c.kv_heads()) * static_cast<double>(c.d_head());
  double layer = 2 * d * d + 2 * d * kv + (c.ffn.gated ? 3 : 2) * d * f;
  if (c.architecture == Architecture::EncoderDecoder)
    total += static_cast<double>(c.n_layers) * layer +
             static_cast<double>(c.n_decoder_layers) * (layer + 4 * d * d);
  else
    total += static_cast<double>(c.n_layers) * layer;
  return total;
}

void validate_tokenizer(const ModelConfig& c, const std::string& origin) {
  const TokenizerConfig& t = c.tokenizer;
  if (t.kind == TokenizerKind::Bytes) {
    if (c.vocab_size < 256)
      fail(origin, "a bytes tokenizer needs vocab_size >= 256 (one id per byte value), got " +
                       std::to_string(c.vocab_size));
    if (!t.vocab.empty())
      fail(origin, "a bytes tokenizer takes no vocab (its ids are the byte values); remove "
                   "tokenizer.vocab or set tokenizer.type to \"chars\" or \"words\"");
    return;
  }
  if (t.kind == TokenizerKind::Labels) {  // class names: may repeat (ImageNet has two "crane")
    if (static_cast<int64_t>(t.vocab.size()) != c.vocab_size)
      fail(origin, "a labels tokenizer names every output class: it has " +
                       std::to_string(t.vocab.size()) + " labels but vocab_size is " +
                       std::to_string(c.vocab_size));
    for (size_t i = 0; i < t.vocab.size(); ++i)
      if (!utf8_valid(t.vocab[i]))
        fail(origin, "tokenizer.vocab[" + std::to_string(i) + "] is not valid UTF-8");
    if (!c.embeddings.patches.enabled())
      fail(origin, "tokenizer type \"labels\" reads no text; it belongs to image models "
                   "(embeddings.patches)");
    return;
  }
  if (c.embeddings.patches.enabled())
    fail(origin, "an image model (embeddings.patches) reads no text: its tokenizer.type must be "
                 "\"labels\" (the names of its output classes)");
  const bool json_kind = is_tokenizer_json_kind(t.kind);
  const bool hf = t.kind == TokenizerKind::Gpt2Bpe || t.kind == TokenizerKind::WordPiece ||
                  json_kind;
  const std::string kind_string = enum_name(t.kind, kTokenizerKinds, "tokenizer kind");
  const char* kind = kind_string.c_str();
  if (t.kind != TokenizerKind::Gpt2Bpe && !json_kind && !t.merges.empty())
    fail(origin, std::string("tokenizer.merges belongs to the BPE types (\"gpt2_bpe\", "
                             "\"byte_level_bpe\", \"sentencepiece_bpe\"), not \"") + kind +
                     "\"; remove it");
  if (!json_kind && (!t.added_tokens.empty() || !t.bos.empty() || !t.eos.empty() ||
                     t.byte_fallback || t.ignore_merges || t.nfc || t.metaspace_split ||
                     t.space_prefix != SpacePrefix::None))
    fail(origin, std::string("tokenizer.added_tokens, bos, eos, byte_fallback, ignore_merges, "
                             "nfc, metaspace_split and space_prefix belong to the tokenizer.json "
                             "types (\"byte_level_bpe\", \"sentencepiece_bpe\"), not \"") +
                     kind + "\"; remove them");
  if (t.kind == TokenizerKind::ByteLevelBpe &&
      (t.byte_fallback || t.metaspace_split || t.space_prefix != SpacePrefix::None))
    fail(origin, "tokenizer.byte_fallback, metaspace_split and space_prefix belong to type "
                 "\"sentencepiece_bpe\"; a byte-level vocab has every byte");
  if (t.kind == TokenizerKind::SentencePieceBpe && t.nfc)
    fail(origin, "tokenizer.nfc belongs to type \"byte_level_bpe\", not \"sentencepiece_bpe\"");
  if (t.kind == TokenizerKind::WordPiece && t.max_chars_per_word < 1)
    fail(origin, "tokenizer.max_chars_per_word must be >= 1, got " +
                     std::to_string(t.max_chars_per_word));
  // A checkpoint's embedding may have more rows than its tokenizer has tokens (GPT-2 variants
  // pad the vocab to a multiple of 64), never fewer.
  if (hf ? static_cast<int64_t>(t.vocab.size()) > c.vocab_size
         : static_cast<int64_t>(t.vocab.size()) != c.vocab_size)
    fail(origin, "tokenizer has " + std::to_string(t.vocab.size()) +
                     " entries but vocab_size is " + std::to_string(c.vocab_size));
  std::unordered_set<std::string_view> seen;  // hashed: a GPT-2 vocab has 50k entries
  seen.reserve(t.vocab.size());
  for (size_t i = 0; i < t.vocab.size(); ++i) {
    const std::string& entry = t.vocab[i];
    if (!utf8_valid(entry))
      fail(origin, "tokenizer.vocab[" + std::to_string(i) + "] is not valid UTF-8");
    // Two ids for one string would make encoding ambiguous.
    if (!seen.insert(entry).second)
      fail(origin, "tokenizer.vocab[" + std::to_string(i) + "] " + quote(entry) +
                       " appears twice in the " + kind + " vocab");
  }
  if (t.kind == TokenizerKind::WordPiece)
    for (const std::string* special : {&t.cls, &t.sep})
      if (!seen.count(*special))
        fail(origin, "tokenizer special token " + quote(sanitize(*special)) +
                         " is not in the wordpiece vocab");
  if (json_kind) {
    // The tokenizer resolves these to ids; an entry missing from the vocab would be a token
    // the model has no row for.
    const auto require = [&](const std::string& token, const std::string& what) {
      if (!seen.count(token))
        fail(origin, what + " " + quote(sanitize(token)) + " is not in the " + kind + " vocab");
    };
    for (size_t i = 0; i < t.added_tokens.size(); ++i)
      require(t.added_tokens[i].content, "tokenizer.added_tokens[" + std::to_string(i) + "]");
    if (!t.bos.empty()) require(t.bos, "tokenizer.bos");
    if (!t.eos.empty()) require(t.eos, "tokenizer.eos");
    if (t.kind == TokenizerKind::SentencePieceBpe) {
      if (!t.unk.empty()) require(t.unk, "tokenizer.unk");
      if (t.unk.empty() && !t.byte_fallback)
        fail(origin, "a sentencepiece_bpe tokenizer without byte_fallback needs tokenizer.unk "
                     "(the token of characters missing from the vocab)");
    }
    return;
  }
  if (t.kind != TokenizerKind::Gpt2Bpe && !seen.count(t.unk))
    fail(origin, "tokenizer.unk " + quote(sanitize(t.unk)) + " is not in the " + kind +
                     " vocab; add it to tokenizer.vocab or set tokenizer.unk to one of them");
}

// The shortest decimal that reads back (through the same double -> float path the parser
// uses) as exactly `f`, so config files show 1e-05 rather than 9.999999747378752e-06.
double shortest_float(float f) {
  for (int precision = 6; precision <= 9; ++precision) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(f));
    double d = std::strtod(buf, nullptr);
    if (static_cast<float>(d) == f) return d;
  }
  return static_cast<double>(f);
}

}  // namespace config_json

using namespace config_json;

// ---- public API -------------------------------------------------------------------------

size_t edit_distance(const std::string& a, const std::string& b) {
  // One row of the Levenshtein table: row[j] = distance(a[0, i), b[0, j)).
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];  // distance(a[0, i-1), b[0, j-1))
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Returns "" when no candidate is close enough (distance <= max(2, |word| / 3)): a far-off
// "did you mean" misleads more than no hint. Ties go to the earlier candidate.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& c : candidates) {
    // Lengths differing by more than the limit cannot be within it; skips long garbage fast.
    size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
    if (gap > limit) continue;
    size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

ModelConfig parse_config(const std::string& json_text, const std::string& origin) {
  Json root = parse_json(json_text, origin);
  if (!root.is_object()) fail(origin, "config must be a JSON object, got " + type_name(root));

  // Unknown keys first: a typo explains many later errors, so it is the one to report.
  std::vector<std::string> known = kTopKeys;
  for (const ConfigSection& section : config_sections()) known.push_back(section.key);
  check_known_keys(root, known, "config", origin);
  auto tok = root.find("tokenizer");
  if (tok != root.end() && tok->is_object())
    check_known_keys(*tok, kTokenizerKeys, "tokenizer", origin);

  Reader r{origin};
  ModelConfig c;
  auto get = [&](const char* key) -> const Json* {
    auto it = root.find(key);
    return it == root.end() ? nullptr : &*it;
  };
  if (auto v = get("name")) c.name = r.string(*v, "name");
  if (auto v = get("description")) c.description = r.string(*v, "description");
  if (auto v = get("architecture"))
    c.architecture = r.enumeration(*v, "architecture", kArchitectures);
  if (auto v = get("tokenizer")) {
    if (!v->is_object()) fail(origin, "tokenizer must be an object, " + got(*v));
    read_tokenizer(*v, r, c.tokenizer);
  }
  if (auto v = get("vocab_size")) c.vocab_size = r.integer(*v, "vocab_size");
  if (auto v = get("d_model")) c.d_model = r.integer(*v, "d_model");
  if (auto v = get("n_heads")) c.n_heads = r.integer(*v, "n_heads");
  if (auto v = get("d_ff")) c.d_ff = r.integer(*v, "d_ff");
  if (auto v = get("n_layers")) c.n_layers = r.integer(*v, "n_layers");
  if (auto v = get("n_decoder_layers")) c.n_decoder_layers = r.integer(*v, "n_decoder_layers");
  if (auto v = get("max_positions")) c.max_positions = r.integer(*v, "max_positions");
  if (auto v = get("positional")) c.positional = r.enumeration(*v, "positional", kPositionals);
  if (auto v = get("sinusoid_layout"))
    c.sinusoid_layout = r.enumeration(*v, "sinusoid_layout", kLayouts);
  if (auto v = get("scale_embedding")) c.scale_embedding = r.boolean(*v, "scale_embedding");
  if (auto v = get("norm")) c.norm = r.enumeration(*v, "norm", kNorms);
  if (auto v = get("norm_position"))
    c.norm_position = r.enumeration(*v, "norm_position", kNormPositions);
  if (auto v = get("norm_eps")) c.norm_eps = r.number(*v, "norm_eps");
  if (auto v = get("fixnorm")) c.fixnorm = r.boolean(*v, "fixnorm");
  if (auto v = get("activation")) c.activation = r.enumeration(*v, "activation", kActivations);
  if (auto v = get("attention_bias")) c.attention_bias = r.boolean(*v, "attention_bias");
  if (auto v = get("ffn_bias")) c.ffn_bias = r.boolean(*v, "ffn_bias");
  if (auto v = get("output")) c.output = r.enumeration(*v, "output", kOutputs);
  if (auto v = get("pad_id")) c.pad_id = r.integer(*v, "pad_id");
  if (auto v = get("bos_id")) c.bos_id = r.integer(*v, "bos_id");
  if (auto v = get("seed")) c.seed = r.unsigned_integer(*v, "seed");
  if (auto v = get("init_std")) c.init_std = r.number(*v, "init_std");
  for (const ConfigSection& section : config_sections())
    if (auto v = get(section.key)) {
      if (!v->is_object()) fail(origin, std::string(section.key) + " must be an object, " + got(*v));
      section.read(*v, r, c);
    }

  validate_config(c, origin);
  return c;
}

void validate_config(const ModelConfig& c, const std::string& origin) {
  check_range(c.vocab_size, 1, kMaxVocab, "vocab_size", origin);
  check_range(c.d_model, 1, kMaxDModel, "d_model", origin);
  check_range(c.n_heads, 1, kMaxHeads, "n_heads", origin);
  if (c.attention.head_dim == 0 && c.d_model % c.n_heads != 0)
    fail(origin, "d_model " + std::to_string(c.d_model) + " is not divisible by n_heads " +
                     std::to_string(c.n_heads) + " (give attention.head_dim for heads of another width)");
  if (c.attention.head_dim > 0 && c.attention.head_dim * c.n_heads > kMaxDModel)
    fail(origin, "n_heads * attention.head_dim = " + std::to_string(c.attention.head_dim * c.n_heads) +
                     " is above the largest attention width, " + std::to_string(kMaxDModel));
  check_range(c.d_ff, 1, kMaxDff, "d_ff", origin);
  check_range(c.n_layers, 1, kMaxLayers, "n_layers", origin);
  if (c.architecture == Architecture::EncoderDecoder) {
    if (c.n_decoder_layers < 1)
      fail(origin, "n_decoder_layers must be >= 1 for an \"encoder-decoder\" model, got " +
                       std::to_string(c.n_decoder_layers));
    check_range(c.n_decoder_layers, 1, kMaxLayers, "n_decoder_layers", origin);
  } else if (c.n_decoder_layers != 0) {
    fail(origin, "n_decoder_layers must be 0 unless architecture is \"encoder-decoder\" (got " +
                     std::to_string(c.n_decoder_layers) + "; n_layers sets the depth of an " +
                     "encoder-only or decoder-only model)");
  }
  check_range(c.max_positions, 1, kMaxPositions, "max_positions", origin);
  // sin and cos fill the dimensions in pairs in both layouts.
  if (c.positional == Positional::Sinusoidal && c.d_model % 2 != 0)
    fail(origin, "sinusoidal positional encoding needs an even d_model, got " +
                     std::to_string(c.d_model));
  if (!(c.norm_eps > 0) || !std::isfinite(c.norm_eps))
    fail(origin, "norm_eps must be a positive finite number, got " + format_float(c.norm_eps));
  if (!(c.init_std >= 0) || !std::isfinite(c.init_std))
    fail(origin, "init_std must be a finite number >= 0, got " + format_float(c.init_std));
  for (auto [key, id] : {std::pair{"pad_id", c.pad_id}, std::pair{"bos_id", c.bos_id}})
    if (id < -1 || id >= c.vocab_size)
      fail(origin, std::string(key) + " " + std::to_string(id) +
                       " is out of range for vocab_size " + std::to_string(c.vocab_size) +
                       " (valid: -1 for none, or 0.." +
                       std::to_string(c.vocab_size - 1) + ")");
  validate_tokenizer(c, origin);
  for (const ConfigSection& section : config_sections()) section.validate(c, origin);
  config_json::check_compatibility(c, origin);  // after each section's own checks
  double parameters = estimate_parameters(c);
  if (parameters > kMaxParameters) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "~%.1f billion", parameters / 1e9);
    fail(origin, std::string("config asks for ") + buf +
                     " parameters, more than this tool supports (at most 20 billion)");
  }
}

std::string config_to_json(const ModelConfig& c) {
  OrderedJson tokenizer;
  tokenizer["type"] = enum_name(c.tokenizer.kind, kTokenizerKinds, "tokenizer kind");
  tokenizer["vocab"] = c.tokenizer.vocab;
  tokenizer["unk"] = c.tokenizer.unk;
  tokenizer["lowercase"] = c.tokenizer.lowercase;
  if (c.tokenizer.kind == TokenizerKind::Gpt2Bpe || is_tokenizer_json_kind(c.tokenizer.kind))
    tokenizer["merges"] = c.tokenizer.merges;
  if (c.tokenizer.kind == TokenizerKind::ByteLevelBpe) {
    tokenizer["split_regex"] = enum_name(c.tokenizer.split_regex, kSplitRegexes, "split_regex");
    tokenizer["nfc"] = c.tokenizer.nfc;
  }
  if (c.tokenizer.kind == TokenizerKind::SentencePieceBpe) {
    tokenizer["space_prefix"] =
        enum_name(c.tokenizer.space_prefix, kSpacePrefixes, "space_prefix");
    tokenizer["metaspace_split"] = c.tokenizer.metaspace_split;
    tokenizer["byte_fallback"] = c.tokenizer.byte_fallback;
  }
  if (is_tokenizer_json_kind(c.tokenizer.kind)) {
    tokenizer["ignore_merges"] = c.tokenizer.ignore_merges;
    OrderedJson added = OrderedJson::array();
    for (const AddedToken& a : c.tokenizer.added_tokens) {
      if (a == AddedToken{a.content}) {  // no flag set: the plain string
        added.push_back(a.content);
        continue;
      }
      OrderedJson o;
      o["content"] = a.content;
      o["lstrip"] = a.lstrip;
      o["rstrip"] = a.rstrip;
      o["single_word"] = a.single_word;
      o["normalized"] = a.normalized;
      added.push_back(std::move(o));
    }
    tokenizer["added_tokens"] = std::move(added);
    tokenizer["bos"] = c.tokenizer.bos;
    tokenizer["eos"] = c.tokenizer.eos;
  }
  if (c.tokenizer.kind == TokenizerKind::WordPiece) {
    tokenizer["strip_accents"] = c.tokenizer.strip_accents;
    tokenizer["cls"] = c.tokenizer.cls;
    tokenizer["sep"] = c.tokenizer.sep;
    tokenizer["max_chars_per_word"] = c.tokenizer.max_chars_per_word;
  }

  OrderedJson j;
  j["name"] = c.name;
  j["description"] = c.description;
  j["architecture"] = enum_name(c.architecture, kArchitectures, "architecture");
  j["tokenizer"] = std::move(tokenizer);
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["n_heads"] = c.n_heads;
  j["d_ff"] = c.d_ff;
  j["n_layers"] = c.n_layers;
  j["n_decoder_layers"] = c.n_decoder_layers;
  j["max_positions"] = c.max_positions;
  j["positional"] = enum_name(c.positional, kPositionals, "positional");
  j["sinusoid_layout"] = enum_name(c.sinusoid_layout, kLayouts, "sinusoid_layout");
  j["scale_embedding"] = c.scale_embedding;
  j["norm"] = enum_name(c.norm, kNorms, "norm");
  j["norm_position"] = enum_name(c.norm_position, kNormPositions, "norm_position");
  j["norm_eps"] = shortest_float(c.norm_eps);
  j["fixnorm"] = c.fixnorm;
  j["activation"] = enum_name(c.activation, kActivations, "activation");
  j["attention_bias"] = c.attention_bias;
  j["ffn_bias"] = c.ffn_bias;
  j["output"] = enum_name(c.output, kOutputs, "output");
  j["pad_id"] = c.pad_id;
  j["bos_id"] = c.bos_id;
  j["seed"] = c.seed;
  j["init_std"] = shortest_float(c.init_std);
  for (const ConfigSection& section : config_sections()) j[section.key] = section.write(c);
  // Strings from parse_config are valid UTF-8; replacing (not throwing) keeps a struct filled
  // by code with broken bytes printable.
  return j.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

}  // namespace atlas
