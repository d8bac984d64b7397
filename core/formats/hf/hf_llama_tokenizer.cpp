// tokenizer.json of Llama-family checkpoints (the `tokenizers` library's serialisation) into a
// byte_level_bpe or sentencepiece_bpe TokenizerConfig. The file is read as a pipeline:
// normalizer, pre-tokenizer, model, added tokens, post-processor; each part is accepted only in
// the forms whose behaviour core/tokenizers/hf_bpe_tokenizer.cpp reproduces, and refused by
// name otherwise, because a silently different tokenization would show the user attention over
// tokens the model never sees.
#include <algorithm>
#include <optional>
#include <tuple>

#include "core/formats/hf/hf_tokenizer_json.h"
#include "core/formats/hf/sentencepiece_model.h"
#include "core/tensor/error.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tokenizers/utf8.h"

namespace atlas::hf_tokenizer {
namespace {

constexpr const char* kLlamaMetaspace = "\xE2\x96\x81";  // "▁"

std::string show(const std::string& s) { return "\"" + (utf8::is_valid(s) ? s : "?") + "\""; }

std::string type_of(const Json& v) {
  return v.is_object() && v.contains("type") && v["type"].is_string() ? v["type"].get<std::string>()
                                                                       : std::string();
}

// What the normalizer and pre-tokenizer say, gathered over their Sequences.
struct Pipeline {
  bool nfc = false;
  bool prepend = false;        // normalizer Prepend("▁")
  bool replace_space = false;  // normalizer Replace(" " -> "▁")
  bool byte_level = false;     // pre-tokenizer ByteLevel
  bool byte_level_regex = false;  // ... with use_regex: GPT-2's split
  std::optional<SplitRegex> split;
  bool metaspace = false;
  SpacePrefix metaspace_prefix = SpacePrefix::Always;
  bool metaspace_split = true;
  bool split_on_space = false;  // Split(" ", MergedWithPrevious), Gemma's
};

void read_normalizer(const fs::path& file, const Json& n, const std::string& where, Pipeline& p) {
  if (n.is_null()) return;
  const std::string type = type_of(n);
  if (type == "Sequence") {
    if (!n.contains("normalizers") || !n["normalizers"].is_array())
      fail(file, where + ".normalizers must be an array");
    for (size_t i = 0; i < n["normalizers"].size(); ++i)
      read_normalizer(file, n["normalizers"][i], where + ".normalizers[" + std::to_string(i) + "]",
                      p);
  } else if (type == "NFC") {
    p.nfc = true;
  } else if (type == "Prepend") {
    if (n.value("prepend", std::string()) != kLlamaMetaspace)
      fail(file, where + ": a Prepend normalizer is supported only with \"▁\", not " +
                     show(n.value("prepend", std::string())));
    p.prepend = true;
  } else if (type == "Replace") {
    const Json& pattern = n.value("pattern", Json());
    if (!pattern.is_object() || pattern.value("String", std::string("?")) != " " ||
        n.value("content", std::string()) != kLlamaMetaspace)
      fail(file, where + ": a Replace normalizer is supported only as \" \" -> \"▁\"");
    p.replace_space = true;
  } else {
    fail(file, where + ": normalizer type " + show(type) +
                   " is not supported (supported: NFC, Prepend(\"▁\"), Replace(\" \" -> \"▁\"), "
                   "Sequence)");
  }
}

void read_pre_tokenizer(const fs::path& file, const Json& t, const std::string& where,
                        Pipeline& p) {
  if (t.is_null()) return;
  const std::string type = type_of(t);
  if (type == "Sequence") {
    if (!t.contains("pretokenizers") || !t["pretokenizers"].is_array())
      fail(file, where + ".pretokenizers must be an array");
    for (size_t i = 0; i < t["pretokenizers"].size(); ++i)
      read_pre_tokenizer(file, t["pretokenizers"][i],
                         where + ".pretokenizers[" + std::to_string(i) + "]", p);
  } else if (type == "Split") {
    const Json& pattern = t.value("pattern", Json());
    if (t.value("invert", false)) fail(file, where + ": an inverted Split is not supported");
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      const std::string regex = pattern["Regex"].get<std::string>();
      if (regex == kLlama3SplitPattern) p.split = SplitRegex::Llama3;
      else if (regex == kQwen2SplitPattern) p.split = SplitRegex::Qwen2;
      else if (regex == kGpt2SplitPattern) p.split = SplitRegex::Gpt2;
      else
        fail(file, where + ": the Split regex " + show(regex) +
                       " is not one this tool implements (Llama 3's, Qwen2's or GPT-2's)");
      if (t.value("behavior", std::string()) != "Isolated")
        fail(file, where + ": a Split regex is supported with behavior \"Isolated\", not " +
                       show(t.value("behavior", std::string())));
      if (p.split && p.byte_level) fail(file, where + ": a Split after ByteLevel is not supported");
    } else if (pattern.is_object() && pattern.value("String", std::string("?")) == " ") {
      p.split_on_space = true;  // checked below: a no-op once spaces became "▁"
    } else {
      fail(file, where + ": Split pattern " + pattern.dump() + " is not supported");
    }
  } else if (type == "ByteLevel") {
    if (t.value("add_prefix_space", false))
      fail(file, where + ": ByteLevel with add_prefix_space true is not supported");
    p.byte_level = true;
    p.byte_level_regex = t.value("use_regex", true);
  } else if (type == "Metaspace") {
    if (t.value("replacement", std::string()) != kLlamaMetaspace)
      fail(file, where + ": Metaspace is supported only with replacement \"▁\"");
    p.metaspace = true;
    // prepend_scheme (newer files) or add_prefix_space (older ones); "always" by default.
    const std::string scheme = t.value("prepend_scheme", std::string());
    if (scheme == "first") p.metaspace_prefix = SpacePrefix::First;
    else if (scheme == "never") p.metaspace_prefix = SpacePrefix::None;
    else if (scheme == "always" || scheme.empty()) p.metaspace_prefix = SpacePrefix::Always;
    else fail(file, where + ": Metaspace prepend_scheme " + show(scheme) + " is unknown");
    if (scheme.empty() && t.contains("add_prefix_space") && !t.value("add_prefix_space", true))
      p.metaspace_prefix = SpacePrefix::None;
    p.metaspace_split = t.value("split", true);
  } else {
    fail(file, where + ": pre-tokenizer type " + show(type) +
                   " is not supported (supported: Split with Llama 3's, Qwen2's or GPT-2's "
                   "regex, ByteLevel, Metaspace, Sequence)");
  }
}

// model.merges: "left right" strings or ["left", "right"] pairs (newer files).
std::vector<std::string> read_merges(const fs::path& file, const Json& model) {
  if (!model.contains("merges") || !model["merges"].is_array())
    fail(file, "model.merges must be an array of merge rules");
  std::vector<std::string> merges;
  merges.reserve(model["merges"].size());
  for (const Json& m : model["merges"]) {
    const std::string where = "model.merges[" + std::to_string(merges.size()) + "]";
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      const std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
      // Stored as "a b": a symbol with a space in it would make that ambiguous.
      if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
        fail(file, where + ": a merge of a symbol containing a space is not supported");
      merges.push_back(a + " " + b);
    } else {
      fail(file, where + " must be \"left right\" or [\"left\", \"right\"]");
    }
  }
  return merges;
}

// added_tokens: each {id, content, flags}; the ids past model.vocab extend the vocab.
void read_added_tokens(const fs::path& file, const Json& root, TokenizerConfig& c) {
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return;
  if (!root["added_tokens"].is_array()) fail(file, "added_tokens must be an array");
  std::vector<std::pair<int64_t, AddedToken>> added;
  for (size_t i = 0; i < root["added_tokens"].size(); ++i) {
    const Json& a = root["added_tokens"][i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string())
      fail(file, where + " must be an object with an integer \"id\" and a string \"content\"");
    AddedToken t;
    t.content = a["content"].get<std::string>();
    if (t.content.empty() || !utf8::is_valid(t.content))
      fail(file, where + ": the content is empty or not valid UTF-8");
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    t.single_word = a.value("single_word", false);
    t.normalized = a.value("normalized", !a.value("special", false));
    added.emplace_back(a["id"].get<int64_t>(), t);
  }
  std::sort(added.begin(), added.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [id, t] : added) {
    const std::string where = "added token " + show(t.content) + " (id " + std::to_string(id) + ")";
    if (id < 0) fail(file, where + ": the id is negative");
    if (size_t(id) < c.vocab.size()) {
      if (c.vocab[size_t(id)] != t.content)
        fail(file, where + ": model.vocab gives id " + std::to_string(id) + " to " +
                       show(c.vocab[size_t(id)]));
    } else if (size_t(id) == c.vocab.size()) {
      c.vocab.push_back(t.content);
    } else {
      fail(file, where + ": the ids must continue model.vocab without gaps (next is " +
                     std::to_string(c.vocab.size()) + ")");
    }
    c.added_tokens.push_back(t);
  }
}

// post_processor: TemplateProcessing's "single" is [SpecialToken]? Sequence A [SpecialToken]?;
// the special tokens become bos and eos. ByteLevel post-processing changes no id.
void read_post_processor(const fs::path& file, const Json& p, const std::string& where,
                         TokenizerConfig& c) {
  if (p.is_null()) return;
  const std::string type = type_of(p);
  if (type == "Sequence") {
    if (!p.contains("processors") || !p["processors"].is_array())
      fail(file, where + ".processors must be an array");
    for (size_t i = 0; i < p["processors"].size(); ++i)
      read_post_processor(file, p["processors"][i], where + ".processors[" + std::to_string(i) + "]",
                          c);
  } else if (type == "ByteLevel") {
    return;
  } else if (type == "TemplateProcessing") {
    if (!p.contains("single") || !p["single"].is_array())
      fail(file, where + ".single must be an array");
    bool seen_sequence = false;
    for (const Json& item : p["single"]) {
      if (item.is_object() && item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      if (!item.is_object() || !item.contains("SpecialToken") ||
          !item["SpecialToken"].value("id", Json()).is_string())
        fail(file, where + ".single holds an item that is neither a SpecialToken nor the "
                           "Sequence");
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      // special_tokens maps the name to the token(s) it stands for; one token is supported.
      const Json& s = p.value("special_tokens", Json::object()).value(name, Json());
      if (!s.is_object() || !s.contains("tokens") || !s["tokens"].is_array() ||
          s["tokens"].size() != 1 || !s["tokens"][0].is_string())
        fail(file, where + ": special token " + show(name) +
                       " must stand for exactly one token in special_tokens");
      std::string& slot = seen_sequence ? c.eos : c.bos;
      if (!slot.empty())
        fail(file, where + ".single puts two special tokens on one side of the text; only one "
                           "BOS and one EOS are supported");
      slot = s["tokens"][0].get<std::string>();
    }
    if (!seen_sequence) fail(file, where + ".single has no Sequence (the text)");
  } else {
    fail(file, where + ": post-processor type " + show(type) +
                   " is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
}

// tokenizer_config.json: transformers' Llama and Gemma tokenizers rebuild the template from
// add_bos_token / add_eos_token when these are given, so they win over the file's template.
void read_tokenizer_config(const fs::path& dir, TokenizerConfig& c) {
  const fs::path file = dir / "tokenizer_config.json";
  if (!is_present(file)) return;
  const Json t = parse_json(file, read_text(file, ""));
  if (!t.is_object()) fail(file, "must be a JSON object");
  for (const auto& [flag, token_key, slot] :
       {std::tuple{"add_bos_token", "bos_token", &c.bos},
        std::tuple{"add_eos_token", "eos_token", &c.eos}}) {
    if (!t.contains(flag) || t[flag].is_null()) continue;
    if (!t[flag].is_boolean()) fail(file, std::string(flag) + " must be true or false");
    if (!t[flag].get<bool>()) {
      *slot = "";
      continue;
    }
    const std::string token = t.contains(token_key) ? token_text(t[token_key]) : std::string();
    if (!token.empty()) *slot = token;
    if (slot->empty())
      fail(file, std::string(flag) + " is true but there is no " + token_key);
  }
}

}  // namespace

TokenizerConfig read_llama_family_tokenizer(const fs::path& dir, const std::string& model_type) {
  const fs::path file = dir / "tokenizer.json";
  const fs::path spm_file = dir / "tokenizer.model";
  std::error_code ec;
  // Older folders (Llama 1/2, Mistral, Gemma) may ship only SentencePiece's own file; its
  // tokenizer is the one llama.cpp converts to a GGUF "llama" vocabulary. transformers' Llama
  // and Gemma tokenizers add BOS and not EOS unless tokenizer_config.json says otherwise.
  if (!fs::exists(fs::symlink_status(file, ec)) && fs::exists(fs::symlink_status(spm_file, ec))) {
    TokenizerConfig c = tokenizer_from_sentencepiece(read_sentencepiece_model(spm_file.string()),
                                                     spm_file.string(), true, false);
    read_tokenizer_config(dir, c);
    for (const auto& [token, what] : {std::pair{&c.bos, "BOS"}, std::pair{&c.eos, "EOS"}})
      if (!token->empty() && std::find(c.vocab.begin(), c.vocab.end(), *token) == c.vocab.end())
        fail(dir / "tokenizer_config.json",
             std::string("the ") + what + " " + show(*token) + " is not in tokenizer.model");
    return c;
  }
  const Json root = parse_json(
      file, read_text(file, "a " + model_type + " checkpoint's tokenizer is read from "
                                                "tokenizer.json or, without it, tokenizer.model "
                                                "(SentencePiece's own file)"));
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
    fail(file, "has no \"model\" object (not a `tokenizers` tokenizer.json?)");
  const Json& model = root["model"];
  const std::string type = model.contains("type") ? type_of(model) : std::string("BPE");
  if (type != "BPE")
    fail(file, "model.type is " + show(type) + "; only BPE models are supported for " +
                   model_type + " (WordPiece, Unigram and WordLevel are not)");
  if (!model.value("dropout", Json()).is_null() && model["dropout"] != 0)
    fail(file, "model.dropout is set; BPE dropout (random merges) is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!model.value(key, Json()).is_null() && model[key] != "")
      fail(file, std::string("model.") + key + " is set; it is not supported");

  TokenizerConfig c;
  if (!model.contains("vocab")) fail(file, "model.vocab is missing");
  c.vocab = vocab_from_object(file, model["vocab"], "model.vocab");
  c.merges = read_merges(file, model);
  check_merges(file, c.merges, c.vocab,
               [](size_t r) { return "model.merges[" + std::to_string(r) + "]"; });
  c.byte_fallback = model.value("byte_fallback", false);
  c.ignore_merges = model.value("ignore_merges", false);
  c.unk = model.value("unk_token", Json()).is_string() ? model["unk_token"].get<std::string>() : "";
  read_added_tokens(file, root, c);

  Pipeline p;
  read_normalizer(file, root.value("normalizer", Json()), "normalizer", p);
  read_pre_tokenizer(file, root.value("pre_tokenizer", Json()), "pre_tokenizer", p);
  if (p.byte_level) {
    c.kind = TokenizerKind::ByteLevelBpe;
    if (p.prepend || p.replace_space || p.metaspace || p.split_on_space || c.byte_fallback)
      fail(file, "mixes a ByteLevel pre-tokenizer with SentencePiece-style parts (\"▁\", "
                 "byte_fallback); not supported");
    if (p.split && p.byte_level_regex)
      fail(file, "pre_tokenizer splits by its Split regex and again by ByteLevel's use_regex; "
                 "not supported");
    if (!p.split && !p.byte_level_regex)
      fail(file, "pre_tokenizer has ByteLevel without a regex and no Split: the whole text "
                 "would be one word; not supported");
    c.split_regex = p.split ? *p.split : SplitRegex::Gpt2;
    c.nfc = p.nfc;
    c.unk = "";  // every byte has a token
  } else {
    c.kind = TokenizerKind::SentencePieceBpe;
    if (p.split) fail(file, "a Split regex without a ByteLevel pre-tokenizer is not supported");
    if (p.nfc) fail(file, "an NFC normalizer with a SentencePiece-style model is not supported");
    if (p.metaspace && (p.prepend || p.replace_space))
      fail(file, "has both a Metaspace pre-tokenizer and a \"▁\" normalizer; not supported");
    if (!p.metaspace && !p.replace_space)
      fail(file, "neither a ByteLevel pre-tokenizer nor spaces rewritten as \"▁\" (Metaspace, or "
                 "normalizer Replace(\" \" -> \"▁\")): not a tokenizer of a form this tool reads");
    if (p.prepend && !p.replace_space)
      fail(file, "normalizer Prepend(\"▁\") without Replace(\" \" -> \"▁\") is not supported");
    // Gemma's Split(" ") comes after every space became "▁", so it never splits.
    if (p.split_on_space && p.metaspace)
      fail(file, "a Split on \" \" before Metaspace is not supported");
    c.space_prefix = p.metaspace ? p.metaspace_prefix
                     : p.prepend ? SpacePrefix::Prepend
                                 : SpacePrefix::None;
    c.metaspace_split = p.metaspace && p.metaspace_split;
    if (!c.unk.empty() && !model.value("fuse_unk", false))
      fail(file, "model.fuse_unk is false; only fused unknown tokens (SentencePiece's) are "
                 "supported");
    if (c.unk.empty() && !c.byte_fallback)
      fail(file, "model has neither unk_token nor byte_fallback: characters missing from the "
                 "vocab would be dropped");
  }
  read_post_processor(file, root.value("post_processor", Json()), "post_processor", c);
  read_tokenizer_config(dir, c);
  for (const auto& [token, what] : {std::pair{&c.bos, "BOS"}, std::pair{&c.eos, "EOS"},
                                    std::pair{&c.unk, "unknown token"}})
    if (!token->empty() && std::find(c.vocab.begin(), c.vocab.end(), *token) == c.vocab.end())
      fail(file, std::string("the ") + what + " " + show(*token) + " is not in the vocab");
  return c;
}

}  // namespace atlas::hf_tokenizer
