// The table of llama.cpp's pre types and the pattern strings of their split rules, as
// src/llama-vocab.cpp has them (llama_vocab::impl::load, llm_tokenizer_bpe).
#include "core/tokenizers/llamacpp_pretokenize.h"

#include <array>
#include <map>

#include "core/tokenizers/bpe_tokenizer.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tokenizers/split_pattern.h"

namespace atlas {
namespace {

// GPT-2's pattern as llama.cpp writes it (several rules end with it).
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek's CJK block: U+4E00..U+9FA5, U+0800..U+4E00, U+AC00..U+D7FF.
constexpr std::string_view kDeepseekCjk = "[一-龥ࠀ-一가-퟿]+";
// Words in upper- or lower-case letter scripts (Latin, Greek, Cyrillic, Armenian, Georgian,
// Cherokee, ...), each with at most one whitespace in front. Six code points are escaped
// because NFC would replace them by their canonical equivalents (U+2126 OHM SIGN by U+03A9).
constexpr std::string_view kDeepseekLlmWords =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
constexpr std::string_view kDeepseekLlmPunct = "\\s?[!-/:-~！-／：-～‘-‟　-。]+";
constexpr std::string_view kBloom = " ?[^(\\s|.,!?…。，、।۔،)]+";
// Tekken and GPT-4o spell tokenizer.json's \p{Lu}..\p{Lo} classes with lookaheads: a letter
// that is not a-z, then letters that are not A-Z (every non-ASCII letter is both).
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kJais2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr std::string_view kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kUfakzeka =
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kBailingMoe =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kMiniCpm5 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

const std::map<SplitRegex, std::vector<std::string_view>>& rules() {
  static const std::map<SplitRegex, std::vector<std::string_view>> table = {
      {SplitRegex::Gpt2, {kGpt2}},
      {SplitRegex::LlamaCppDefault,
       {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {SplitRegex::LlamaCppLlama3, {kLlama3}},
      {SplitRegex::LlamaCppQwen2, {kQwen2}},
      {SplitRegex::LlamaCppStarcoder, {R"(\p{N})", kGpt2}},
      {SplitRegex::LlamaCppFalcon, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {SplitRegex::LlamaCppDeepseekLlm,
       {"[\r\n]", kDeepseekLlmWords, kDeepseekLlmPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}},
      {SplitRegex::LlamaCppDeepseekCoder,
       {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}},
      {SplitRegex::LlamaCppBloom, {kBloom}},
      {SplitRegex::LlamaCppViking, {kBloom, R"(\p{N})"}},
      {SplitRegex::LlamaCppTekken, {kTekken}},
      {SplitRegex::LlamaCppChameleon,
       {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
        R"(\p{N})", R"([\p{P}!-/:-@\[-`{-~])", kGpt2}},
      {SplitRegex::LlamaCppGpt4o, {kGpt4o}},
      {SplitRegex::LlamaCppJais2, {kJais2}},
      {SplitRegex::LlamaCppSeedCoder, {kSeedCoder}},
      {SplitRegex::LlamaCppUfakzeka, {kUfakzeka}},
      {SplitRegex::LlamaCppLaguna, {R"([^\n]+|[\n]+)", kQwen2}},
      {SplitRegex::LlamaCppBailingMoe, {kBailingMoe}},
      {SplitRegex::LlamaCppMiniCpm5, {R"(\p{N}{1,3})", kMiniCpm5}},
  };
  return table;
}

// llama_vocab::impl::load's names, grouped by rule; ignore_merges and add_bos as it sets them.
constexpr LlamaCppPreType kPreTypes[] = {
    {"default", SplitRegex::LlamaCppDefault},
    {"llama3", SplitRegex::LlamaCppLlama3, true, true},
    {"llama-v3", SplitRegex::LlamaCppLlama3, true, true},
    {"llama-bpe", SplitRegex::LlamaCppLlama3, true, true},
    {"falcon3", SplitRegex::LlamaCppLlama3, true, true},
    {"falcon-h1", SplitRegex::LlamaCppLlama3, true, true},
    {"pixtral", SplitRegex::LlamaCppLlama3, true, true},
    {"midm-2.0", SplitRegex::LlamaCppLlama3, true, true},
    {"lfm2", SplitRegex::LlamaCppLlama3, true, true},
    {"jina-v5-nano", SplitRegex::LlamaCppLlama3, true, true},
    {"dbrx", SplitRegex::LlamaCppLlama3},
    {"smaug-bpe", SplitRegex::LlamaCppLlama3},
    {"glm4", SplitRegex::LlamaCppLlama3},
    {"chatglm-bpe", SplitRegex::LlamaCppLlama3},
    {"qwen2", SplitRegex::LlamaCppQwen2},
    {"deepseek-r1-qwen", SplitRegex::LlamaCppQwen2},
    {"kormo", SplitRegex::LlamaCppQwen2},
    {"f2llmv2", SplitRegex::LlamaCppQwen2},
    {"megrez", SplitRegex::LlamaCppQwen2},
    {"stablelm2", SplitRegex::LlamaCppQwen2},
    {"hunyuan", SplitRegex::LlamaCppQwen2},
    {"solar-open", SplitRegex::LlamaCppQwen2},
    {"grok-2", SplitRegex::LlamaCppQwen2},
    {"gpt-2", SplitRegex::Gpt2},
    {"phi-2", SplitRegex::Gpt2},
    {"jina-es", SplitRegex::Gpt2},
    {"jina-de", SplitRegex::Gpt2},
    {"gigachat", SplitRegex::Gpt2},
    {"jina-v2-es", SplitRegex::Gpt2},
    {"jina-v2-de", SplitRegex::Gpt2},
    {"a.x-4.0", SplitRegex::Gpt2},
    {"mellum", SplitRegex::Gpt2},
    {"modern-bert", SplitRegex::Gpt2},
    {"mpt", SplitRegex::Gpt2},
    {"olmo", SplitRegex::Gpt2},
    {"jais", SplitRegex::Gpt2},
    {"exaone4", SplitRegex::Gpt2},
    {"trillion", SplitRegex::Gpt2},
    {"granite-docling", SplitRegex::Gpt2},
    {"starcoder", SplitRegex::LlamaCppStarcoder},
    {"refact", SplitRegex::LlamaCppStarcoder},
    {"command-r", SplitRegex::LlamaCppStarcoder},
    {"smollm", SplitRegex::LlamaCppStarcoder},
    {"codeshell", SplitRegex::LlamaCppStarcoder},
    {"exaone", SplitRegex::LlamaCppStarcoder},
    {"minerva-7b", SplitRegex::LlamaCppStarcoder},
    {"mellum2", SplitRegex::LlamaCppStarcoder},
    {"falcon", SplitRegex::LlamaCppFalcon},
    {"deepseek-llm", SplitRegex::LlamaCppDeepseekLlm},
    {"deepseek-coder", SplitRegex::LlamaCppDeepseekCoder},
    {"poro-chat", SplitRegex::LlamaCppBloom},
    {"bloom", SplitRegex::LlamaCppBloom},
    {"gpt3-finnish", SplitRegex::LlamaCppBloom},
    {"viking", SplitRegex::LlamaCppViking},
    {"tekken", SplitRegex::LlamaCppTekken, true, true},
    {"chameleon", SplitRegex::LlamaCppChameleon, false, true},
    {"gpt-4o", SplitRegex::LlamaCppGpt4o},
    {"llama4", SplitRegex::LlamaCppGpt4o},
    {"kanana2", SplitRegex::LlamaCppGpt4o},
    {"talkie", SplitRegex::LlamaCppGpt4o},
    {"minimax-m2", SplitRegex::LlamaCppGpt4o},
    {"jais-2", SplitRegex::LlamaCppJais2},
    {"seed-coder", SplitRegex::LlamaCppSeedCoder},
    {"ufakzeka", SplitRegex::LlamaCppUfakzeka},
    {"laguna", SplitRegex::LlamaCppLaguna},
    {"bailingmoe", SplitRegex::LlamaCppBailingMoe},
    {"bailingmoe2", SplitRegex::LlamaCppBailingMoe},
    {"llada-moe", SplitRegex::LlamaCppBailingMoe},
    {"minicpm5", SplitRegex::LlamaCppMiniCpm5, true, false},
};

// The compiled patterns of a rule, built once.
const std::vector<SplitPattern>& compiled(SplitRegex rule) {
  static const std::map<SplitRegex, std::vector<SplitPattern>> table = [] {
    std::map<SplitRegex, std::vector<SplitPattern>> out;
    for (const auto& [id, patterns] : rules())
      for (const std::string_view p : patterns) out[id].emplace_back(p);
    return out;
  }();
  return table.at(rule);
}

}  // namespace

const LlamaCppPreType* find_llamacpp_pre_type(std::string_view name) {
  if (name.empty()) name = "default";  // llama.cpp warns, then uses its default rule
  for (const LlamaCppPreType& t : kPreTypes)
    if (t.name == name) return &t;
  return nullptr;
}

std::string llamacpp_pre_type_names() {
  std::string out;
  for (const LlamaCppPreType& t : kPreTypes)
    out += (out.empty() ? "\"" : ", \"") + std::string(t.name) + "\"";
  return out;
}

const std::vector<std::string_view>& llamacpp_split_patterns(SplitRegex rule) {
  static const std::vector<std::string_view> none;
  const auto it = rules().find(rule);
  return it == rules().end() ? none : it->second;
}

std::vector<std::pair<size_t, size_t>> llamacpp_pretokenize(SplitRegex rule,
                                                            std::string_view text) {
  switch (rule) {
    case SplitRegex::Gpt2: return gpt2_pretokenize(text);
    case SplitRegex::LlamaCppLlama3: return llama3_pretokenize(text, false, true);
    case SplitRegex::LlamaCppQwen2: return llama3_pretokenize(text, true, true);
    default: return split_by_patterns(text, compiled(rule));
  }
}

}  // namespace atlas
