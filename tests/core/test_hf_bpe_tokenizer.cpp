// Llama-family tokenizer.json (core/formats/hf/hf_llama_tokenizer.cpp) and its tokenizers
// (core/tokenizers/hf_bpe_tokenizer.h). Every file is written here by hand, with a vocabulary
// small enough that the expected ids can be derived in the comments: the pieces of the split
// regex, then the merges applied lowest rank first (leftmost on ties).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "core/tokenizers/hf_bpe_tokenizer.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tokenizers/unicode_nfc.h"
#include "core/tokenizers/tokenizer.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::labels_of;
using atlas::test::ids_of;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Byte-level spelling of raw text: each UTF-8 byte through GPT-2's bytes_to_unicode (written
// out again in hf_test_util.h), so "é" (C3 A9) is "Ã©" and a space is "Ġ".
std::string bl(const std::string& raw) {
  static const std::vector<std::string> symbols = hf_test::byte_symbols();
  std::string out;
  for (const char c : raw) out += symbols[static_cast<uint8_t>(c)];
  return out;
}

// A byte-level vocab: the 256 byte symbols with id = byte value, then `extra` from 256 on.
json byte_level_vocab(const std::vector<std::string>& extra) {
  json vocab = json::object();
  const std::vector<std::string> symbols = hf_test::byte_symbols();
  for (int b = 0; b < 256; ++b) vocab[symbols[size_t(b)]] = b;
  for (size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 256 + int(i);
  return vocab;
}

json added(int id, const std::string& content) {
  return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json bos_template(const std::string& bos, int id) {
  return {{"type", "TemplateProcessing"},
          {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair", json::array()},
          {"special_tokens", {{bos, {{"id", bos}, {"ids", {id}}, {"tokens", {bos}}}}}}};
}

json split_then_byte_level(std::string_view regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", {{"Regex", std::string(regex)}}},
             {"behavior", "Isolated"}, {"invert", false}},
            {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
             {"use_regex", false}}}}};
}

const std::string kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Llama 3 style: byte-level BPE behind the Llama 3 split regex, <|begin_of_text|> put first by
// the post-processor, <|eot_id|> an added token. Ids: bytes 0..255 (id = byte value), then
const std::vector<std::string> kLlama3Extra = {
    "DO", "DON", "'T", "'TS",                       // 256 257 258 259
    "12", "123", "45", "12345",                     // 260 261 262 263
    bl(" w"), bl(" we"), "ll", "'ll",               // 264 265 266 267
    bl(" \n"), bl(" \n\n"), "ok"};                  // 268 269 270
// and the added tokens 271 <|begin_of_text|>, 272 <|eot_id|>.
const std::vector<std::vector<std::string>> kLlama3Merges = {
    {"D", "O"}, {"DO", "N"}, {"'", "T"}, {"'T", "S"},            // ranks 0-3
    {"1", "2"}, {"12", "3"}, {"4", "5"}, {"123", "45"},          // ranks 4-7
    {bl(" "), "w"}, {bl(" w"), "e"}, {"l", "l"}, {"'", "ll"},    // ranks 8-11
    {bl(" "), bl("\n")}, {bl(" \n"), bl("\n")}, {"o", "k"}};     // ranks 12-14

json llama3_tokenizer_json() {
  return {{"version", "1.0"},
          {"added_tokens", {added(271, "<|begin_of_text|>"), added(272, "<|eot_id|>")}},
          {"normalizer", nullptr},
          {"pre_tokenizer", split_then_byte_level(kLlama3Regex)},
          {"post_processor",
           {{"type", "Sequence"},
            {"processors", {{{"type", "ByteLevel"}, {"add_prefix_space", true},
                             {"trim_offsets", false}, {"use_regex", true}},
                            bos_template("<|begin_of_text|>", 271)}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                     {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                     {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                     {"vocab", byte_level_vocab(kLlama3Extra)}, {"merges", kLlama3Merges}}}};
}

fs::path write_tokenizer_dir(const std::string& name, const json& tokenizer,
                   const json& tokenizer_config = nullptr) {
  const fs::path dir = hf_test::fresh_dir(name);
  hf_test::write_text(dir / "tokenizer.json", tokenizer.dump());
  if (!tokenizer_config.is_null())
    hf_test::write_text(dir / "tokenizer_config.json", tokenizer_config.dump());
  return dir;
}

TokenizerConfig read(const fs::path& dir, const std::string& model_type = "llama") {
  return read_hf_tokenizer(dir.string(), model_type, "{}");
}

}  // namespace

std::vector<std::string> pieces(const std::string& text, bool single_digits) {
  std::vector<std::string> out;
  for (const auto& [b, e] : llama3_pretokenize(text, single_digits))
    out.push_back(text.substr(b, e - b));
  return out;
}
using Pieces = std::vector<std::string>;

TEST_CASE("Llama 3 and Qwen2 split regexes, worked by hand", "[hf-bpe]") {
  // Each alternative in order: contraction, letters with one optional non-letter/digit/CRLF
  // before them, digits, symbols (+ CR/LF), whitespace to the last newline, whitespace not
  // followed by a non-space, any whitespace.
  CHECK(pieces("Hello world", false) == Pieces{"Hello", " world"});
  CHECK(pieces("I'M here", false) == Pieces{"I", "'M", " here"});
  CHECK(pieces("x\r\n\r\ny", false) == Pieces{"x", "\r\n\r\n", "y"});
  // "  \t" before a letter: \s+(?!\S) leaves the tab, which then leads the word.
  CHECK(pieces("a  \tb", false) == Pieces{"a", "  ", "\tb"});
  CHECK(pieces("1234567", false) == Pieces{"123", "456", "7"});
  CHECK(pieces("1234567", true) == Pieces{"1", "2", "3", "4", "5", "6", "7"});
  CHECK(pieces("...hi .hi", false) == Pieces{"...", "hi", " .", "hi"});
  CHECK(pieces("(hi", false) == Pieces{"(hi"});
  CHECK(pieces("hi!!\n\nok", false) == Pieces{"hi", "!!\n\n", "ok"});
  CHECK(pieces("a   ", false) == Pieces{"a", "   "});
  CHECK(pieces("a 😀", false) == Pieces{"a", " 😀"});
  CHECK(pieces("'sup 'D", false) == Pieces{"'s", "up", " '", "D"});
}

TEST_CASE("NFC, worked from the Unicode data by hand", "[hf-bpe]") {
  CHECK(to_nfc("e\u0301") == "\u00E9");             // e + acute -> é
  CHECK(to_nfc("\u212B") == "\u00C5");              // ANGSTROM SIGN -> Å (singleton)
  // Marks are put in class order (dot below 220 before circumflex 230) before composing:
  // a + 0323 -> ạ (1EA1), + 0302 -> ậ (1EAD), whichever order they were typed in.
  CHECK(to_nfc("a\u0302\u0323") == "\u1EAD");
  CHECK(to_nfc("a\u0323\u0302") == "\u1EAD");
  CHECK(to_nfc("a\u0301\u0301") == "\u00E1\u0301");  // the second acute is blocked
  CHECK(to_nfc("\u1100\u1161\u11A8") == "\uAC01");   // Hangul jamo -> 각
  CHECK(to_nfc("\u0958") == "\u0915\u093C");          // a composition exclusion stays apart
  CHECK(to_nfc("plain text, 中文 😀") == "plain text, 中文 😀");
}

TEST_CASE("Llama 3 tokenizer.json: split regex, merges, special token, BOS", "[hf-bpe]") {
  const TokenizerConfig c = read(write_tokenizer_dir("llama3", llama3_tokenizer_json()));
  CHECK(c.kind == TokenizerKind::ByteLevelBpe);
  CHECK(c.split_regex == SplitRegex::Llama3);
  CHECK(c.bos == "<|begin_of_text|>");
  CHECK(c.vocab.size() == 273);
  const HfBpeTokenizer tok(c);
  // The added token is cut out first: "DON'TS 12345 we'll \n\n" | <|eot_id|> | "ok".
  // The regex splits the first part into
  //   "DON"    letters (the apostrophe is not one)
  //   "'T"     (?i:'t): contractions match in any case, so "S" is left for the next piece
  //   "S"      letters
  //   " "      a space before a digit: neither " ?\p{L}" nor " ?[^\s\p{L}\p{N}]", so \s+
  //   "123"    \p{N}{1,3}: digits in threes from the left
  //   "45"
  //   " we"    [^\r\n\p{L}\p{N}]?\p{L}+: the space joins the word
  //   "'ll"    contraction
  //   " \n\n"  \s*[\r\n]+: whitespace up to and including the last newline
  // Merges per piece (ranks in kLlama3Merges):
  //   D O N     -> (D O, 0) DO N -> (DO N, 1) DON                    = 257
  //   ' T       -> (' T, 2) 'T                                        = 258 ("'T S" never meets S)
  //   S         = 83;  " " = 32
  //   1 2 3     -> (1 2, 4) 12 3 -> (12 3, 5) 123                     = 261 ("123 45" never meets 45)
  //   4 5       -> (4 5, 6) 45                                        = 262
  //   Ġ w e     -> (Ġ w, 8) Ġw e -> (Ġw e, 9) Ġwe                     = 265
  //   ' l l     -> (l l, 10) ' ll -> (' ll, 11) 'll                   = 267
  //   Ġ Ċ Ċ     -> (Ġ Ċ, 12) ĠĊ Ċ -> (ĠĊ Ċ, 13) ĠĊĊ                   = 269
  //   o k       -> (o k, 14) ok                                       = 270
  // with 271 first (the post-processor's BOS) and 272 for <|eot_id|>.
  const auto tokens = tok.encode("DON'TS 12345 we'll \n\n<|eot_id|>ok");
  CHECK(ids_of(tokens) ==
        std::vector<int32_t>{271, 257, 258, 83, 32, 261, 262, 265, 267, 269, 272, 270});
  CHECK(labels_of(tokens) ==
        std::vector<std::string>{"<|begin_of_text|>", "DON", "'T", "S", "\u2423", "123", "45",
                                 "\u2423we", "'ll", "\u2423\u23CE\u23CE", "<|eot_id|>", "ok"});
  CHECK(tok.label(269) == "\u2423\u23CE\u23CE");
  // Without the text around it the special token is still whole, after the BOS.
  CHECK(ids_of(tok.encode("<|eot_id|>")) == std::vector<int32_t>{271, 272});
  // "\n\n  ok": \s*[\r\n]+ takes "\n\n"; "  " before a letter is \s+(?!\S) = " ", then " ok"
  // -> Ċ Ċ (no merge "Ċ Ċ"), Ġ, Ġ o k -> (o k, 14) Ġ ok (no merge "Ġ ok").
  CHECK(ids_of(tok.encode("\n\n  ok")) == std::vector<int32_t>{271, 10, 10, 32, 32, 270});
}

TEST_CASE("Llama 3 tokenizer.json: ignore_merges takes a piece that is a token whole",
          "[hf-bpe]") {
  // With no merges at all, the piece "ll" (letters) can only be its two bytes [108, 108];
  // with ignore_merges the whole piece is looked up first, and "ll" is token 266.
  json j = llama3_tokenizer_json();
  j["model"]["merges"] = json::array();
  j["model"]["ignore_merges"] = false;
  CHECK(ids_of(HfBpeTokenizer(read(write_tokenizer_dir("ignore-off", j))).encode("ll")) ==
        std::vector<int32_t>{271, 108, 108});
  j["model"]["ignore_merges"] = true;
  const TokenizerConfig c = read(write_tokenizer_dir("ignore-on", j));
  CHECK(c.ignore_merges);
  CHECK(ids_of(HfBpeTokenizer(c).encode("ll")) == std::vector<int32_t>{271, 266});
}

TEST_CASE("Qwen2 tokenizer.json: single digits, NFC normalizer, no BOS", "[hf-bpe]") {
  // Bytes 0..255, then 256 "hi", 257 "12", the bytes of 中 (E4 B8 AD) and 文 (E6 96 87):
  // 258 bl(E4 B8), 259 "中", 260 bl(E6 96), 261 "文", 262 "中文"; added 263 <|im_start|>.
  const std::vector<std::string> extra = {"hi", "12", bl("\xE4\xB8"), bl("中"), bl("\xE6\x96"),
                                          bl("文"), bl("中文")};
  const std::vector<std::vector<std::string>> merges = {
      {"h", "i"}, {"1", "2"}, {bl("\xE4"), bl("\xB8")}, {bl("\xE4\xB8"), bl("\xAD")},
      {bl("\xE6"), bl("\x96")}, {bl("\xE6\x96"), bl("\x87")}, {bl("中"), bl("文")}};
  const json j = {
      {"added_tokens", {added(263, "<|im_start|>")}},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer", split_then_byte_level(kQwen2Regex)},
      {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", false},
                          {"trim_offsets", false}, {"use_regex", false}}},
      {"model", {{"type", "BPE"}, {"byte_fallback", false}, {"ignore_merges", false},
                 {"vocab", byte_level_vocab(extra)}, {"merges", merges}}}};
  const TokenizerConfig c = read(write_tokenizer_dir("qwen2", j), "qwen2");
  CHECK(c.kind == TokenizerKind::ByteLevelBpe);
  CHECK(c.split_regex == SplitRegex::Qwen2);
  CHECK(c.nfc);
  CHECK(c.bos.empty());
  const HfBpeTokenizer tok(c);
  // <|im_start|> | "hi 123中文!": pieces "hi", " " (a space before a digit), "1", "2", "3"
  // (\p{N}: one digit each, so "1 2" never meets), "中文" (letters), "!".
  //   h i -> hi = 256;  " " = 32;  "1" = 49, "2" = 50, "3" = 51
  //   E4 B8 AD E6 96 87 -> (E4 B8, 2) -> (E4B8 AD, 3) 中 -> (E6 96, 4) -> (E696 87, 5) 文
  //                     -> (中 文, 6) 中文 = 262;  "!" = 33.  No BOS.
  const auto tokens = tok.encode("<|im_start|>hi 123中文!");
  CHECK(ids_of(tokens) == std::vector<int32_t>{263, 256, 32, 49, 50, 51, 262, 33});
  CHECK(tokens[6].label == "中文");
  // The NFC normalizer: "hï" typed as i + combining diaeresis (U+0308) is "hï" (C3 AF), whose
  // bytes have no merges here: h i-bytes = 104 195 175, the same as the composed input.
  CHECK(ids_of(tok.encode("hi\u0308")) == std::vector<int32_t>{104, 195, 175});
  CHECK(ids_of(tok.encode("h\u00EF")) == std::vector<int32_t>{104, 195, 175});
}

namespace {

// Llama 2 style: SentencePiece BPE with byte fallback. Ids: 0 <unk>, 1 <s>, 2 </s>,
// 3..258 <0x00>..<0xFF> (id = 3 + byte), then 259 "▁", 260 "H", 261 "i", 262 "1",
// 263 "Hi", 264 "▁Hi", 265 "中".
json llama2_vocab() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    vocab[std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">"] = 3 + b;
  int id = 259;
  for (const char* t : {"▁", "H", "i", "1", "Hi", "▁Hi", "中"}) vocab[t] = id++;
  return vocab;
}

json llama2_tokenizer_json(bool byte_fallback, bool metaspace) {
  json j = {{"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
            {"normalizer", nullptr},
            {"pre_tokenizer", nullptr},
            {"post_processor", nullptr},
            {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true},
                       {"byte_fallback", byte_fallback}, {"vocab", llama2_vocab()},
                       {"merges", {"H i", "▁ Hi"}}}}};
  if (metaspace)
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"},
                          {"prepend_scheme", "first"}, {"split", false}};
  else
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                        {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                         {"content", "▁"}}}}};
  return j;
}

const json kAddBos = {{"add_bos_token", true}, {"add_eos_token", false}, {"bos_token", "<s>"}};

}  // namespace

TEST_CASE("Llama 2 tokenizer.json: ▁ prefix, byte fallback, BOS from tokenizer_config.json",
          "[hf-bpe]") {
  const TokenizerConfig c =
      read(write_tokenizer_dir("llama2", llama2_tokenizer_json(true, false), kAddBos));
  CHECK(c.kind == TokenizerKind::SentencePieceBpe);
  CHECK(c.space_prefix == SpacePrefix::Prepend);
  CHECK(c.byte_fallback);
  CHECK(c.bos == "<s>");  // the file has no post-processor: only tokenizer_config.json says so
  const HfBpeTokenizer tok(c);
  // "Hi €1 Hi" | </s> | "Hi": the normalizer runs on each part between added tokens, so each
  // gets its "▁" (the older files' Prepend): "▁Hi▁€1▁Hi" and "▁Hi".
  //   ▁ H i ▁ € 1 ▁ H i: "€" is not in the vocab, so its UTF-8 bytes E2 82 AC become
  //   <0xE2> <0x82> <0xAC> = 3+226, 3+130, 3+172 = 229, 133, 175.
  //   (H i, 0) twice, leftmost first: ▁ Hi ▁ <E2> <82> <AC> 1 ▁ Hi
  //   (▁ Hi, 1) twice: ▁Hi ▁ <E2> <82> <AC> 1 ▁Hi  ("▁ <0xE2>" is no rule, so "▁" stays)
  //   = 264 259 229 133 175 262 264;  then </s> = 2;  "▁Hi" = 264.  BOS <s> = 1 first.
  const auto tokens = tok.encode("Hi €1 Hi</s>Hi");
  CHECK(ids_of(tokens) == std::vector<int32_t>{1, 264, 259, 229, 133, 175, 262, 264, 2, 264});
  // Labels: "▁" reads as a space; the character sits on its first byte token.
  CHECK(labels_of(tokens) == std::vector<std::string>{"<s>", "\u2423Hi", "\u2423", "€",
                                                      "\u00B782", "\u00B7AC", "1", "\u2423Hi",
                                                      "</s>", "\u2423Hi"});
  CHECK(tok.label(3 + 0x41) == "A");
  CHECK(tok.label(229) == "<0xE2>");
  // A character in the vocab needs no fallback: "▁中" -> ▁ 中 (no rule joins them).
  CHECK(ids_of(tok.encode("中")) == std::vector<int32_t>{1, 259, 265});
  // A text starting with a space: Prepend adds a second "▁" regardless: ▁ ▁Hi.
  CHECK(ids_of(tok.encode(" Hi")) == std::vector<int32_t>{1, 259, 264});

  // add_bos_token false wins over the post-processor's template.
  json with_template = llama2_tokenizer_json(true, false);
  with_template["post_processor"] = bos_template("<s>", 1);
  CHECK(read(write_tokenizer_dir("llama2-tpl", with_template)).bos == "<s>");
  CHECK(read(write_tokenizer_dir("llama2-nobos", with_template, {{"add_bos_token", false}}))
            .bos.empty());
}

TEST_CASE("Llama 2 tokenizer.json: unknown token when byte_fallback is false", "[hf-bpe]") {
  const TokenizerConfig c =
      read(write_tokenizer_dir("llama2-unk", llama2_tokenizer_json(false, false), kAddBos));
  CHECK_FALSE(c.byte_fallback);
  const HfBpeTokenizer tok(c);
  // "▁Hi▁€€1": "€€" has no token and no byte fallback: one <unk> for both (fuse_unk), whose
  // label is the text it stands for.  ▁ H i ▁ <unk> 1 -> (H i) -> (▁ Hi) = 264 259 0 262.
  const auto tokens = tok.encode("Hi €€1");
  CHECK(ids_of(tokens) == std::vector<int32_t>{1, 264, 259, 0, 262});
  CHECK(tokens[3].label == "€€");
}

TEST_CASE("Metaspace tokenizer.json (prepend_scheme first): ▁ only at the start", "[hf-bpe]") {
  const TokenizerConfig c =
      read(write_tokenizer_dir("metaspace", llama2_tokenizer_json(true, true), kAddBos), "mistral");
  CHECK(c.space_prefix == SpacePrefix::First);
  CHECK_FALSE(c.metaspace_split);
  const HfBpeTokenizer tok(c);
  // "Hi" at offset 0 gets its "▁" (▁Hi = 264); "Hi" after </s> does not: H i -> Hi = 263.
  CHECK(ids_of(tok.encode("Hi</s>Hi")) == std::vector<int32_t>{1, 264, 2, 263});
  // A text starting with a space already starts with "▁": no second one (unlike Prepend).
  CHECK(ids_of(tok.encode(" Hi")) == std::vector<int32_t>{1, 264});

  // prepend_scheme "always": after </s> too; split: each "▁word" merged on its own, which
  // changes nothing here (no rule spans a "▁") but must not lose or repeat any text.
  json always = llama2_tokenizer_json(true, true);
  always["pre_tokenizer"]["prepend_scheme"] = "always";
  always["pre_tokenizer"]["split"] = true;
  const TokenizerConfig a =
      read(write_tokenizer_dir("metaspace-always", always, kAddBos), "mistral");
  CHECK(a.space_prefix == SpacePrefix::Always);
  CHECK(a.metaspace_split);
  // "Hi▁Hi" | </s> | "Hi" -> ▁Hi ▁Hi | </s> | ▁Hi.  "Hi  Hi": ▁Hi ▁ ▁Hi (the lone "▁" piece).
  CHECK(ids_of(HfBpeTokenizer(a).encode("Hi Hi</s>Hi")) ==
        std::vector<int32_t>{1, 264, 264, 2, 264});
  CHECK(ids_of(HfBpeTokenizer(a).encode("Hi  Hi")) == std::vector<int32_t>{1, 264, 259, 264});
}

TEST_CASE("Unicode through byte-level BPE: accents, CJK, emoji and their labels", "[hf-bpe]") {
  // Bytes 0..255, then 256 "ï" (C3 AF), the bytes of 中 (E4 B8 AD): 257 E4B8, 258 中; of 😀
  // (F0 9F 98 80): 259 F09F, 260 F09F98, 261 😀.
  const std::vector<std::string> extra = {bl("ï"), bl("\xE4\xB8"), bl("中"), bl("\xF0\x9F"),
                                          bl("\xF0\x9F\x98"), bl("😀")};
  const std::vector<std::vector<std::string>> merges = {
      {bl("\xC3"), bl("\xAF")}, {bl("\xE4"), bl("\xB8")}, {bl("\xE4\xB8"), bl("\xAD")},
      {bl("\xF0"), bl("\x9F")}, {bl("\xF0\x9F"), bl("\x98")}, {bl("\xF0\x9F\x98"), bl("\x80")}};
  const json j = {{"pre_tokenizer", split_then_byte_level(kLlama3Regex)},
                  {"model", {{"type", "BPE"}, {"vocab", byte_level_vocab(extra)},
                             {"merges", merges}}}};
  const HfBpeTokenizer tok(read(write_tokenizer_dir("unicode", j)));
  // Pieces of "naïve é 中 😀!": "naïve" (ï is a letter), " é", " 中" (CJK are letters), " 😀!"
  // (an emoji is a symbol: " ?[^\s\p{L}\p{N}]+" takes it with the "!").
  //   n a ï v e: C3 AF -> (C3 AF, 0) ï          = 110 97 256 118 101
  //   Ġ é: no rule for C3 A9                   = 32 195 169, labels "␣" "é" "·A9"
  //   Ġ 中: (E4 B8, 1) then (E4B8 AD, 2)        = 32 258
  //   Ġ 😀 !: (F0 9F, 3) (F09F 98, 4) (.. 80, 5) = 32 261 33
  const auto tokens = tok.encode("naïve é 中 😀!");
  CHECK(ids_of(tokens) == std::vector<int32_t>{110, 97, 256, 118, 101, 32, 195, 169, 32, 258,
                                               32, 261, 33});
  CHECK(labels_of(tokens) ==
        std::vector<std::string>{"n", "a", "ï", "v", "e", "\u2423", "é", "\u00B7A9", "\u2423",
                                 "中", "\u2423", "😀", "!"});
  CHECK(tok.label(261) == "😀");
  CHECK(tok.label(195) == "<0xC3>");  // a lone lead byte is no character
}

TEST_CASE("Added tokens: longest first, rstrip, single_word", "[hf-bpe]") {
  json j = {{"pre_tokenizer", split_then_byte_level(kLlama3Regex)},
            {"model", {{"type", "BPE"}, {"vocab", byte_level_vocab({})},
                       {"merges", json::array()}}}};
  json a = added(256, "<x>"), b = added(257, "<x>>"), c = added(258, "ab");
  a["rstrip"] = true;
  c["single_word"] = true;
  j["added_tokens"] = {a, b, c};
  const HfBpeTokenizer tok(read(write_tokenizer_dir("added", j)));
  // "<x>>": the longer token wins at the same position = 257.
  CHECK(ids_of(tok.encode("<x>>")) == std::vector<int32_t>{257});
  // "<x>  ab xab": <x> takes the two spaces after it (rstrip) = 256; "ab" stands alone = 258;
  // the "ab" of "xab" touches a letter, so it is text: " xab" -> Ġ x a b = 32 120 97 98.
  const auto tokens = tok.encode("<x>  ab xab");
  CHECK(ids_of(tokens) == std::vector<int32_t>{256, 258, 32, 120, 97, 98});
  CHECK(tokens[0].label == "<x>\u2423\u2423");
}

TEST_CASE("The tokenizer.json kinds round-trip through the project's config.json", "[hf-bpe]") {
  for (const bool byte_level : {true, false}) {
    ModelConfig m;
    m.architecture = Architecture::Decoder;
    m.tokenizer =
        byte_level ? read(write_tokenizer_dir("rt-bl", llama3_tokenizer_json()))
                   : read(write_tokenizer_dir("rt-sp", llama2_tokenizer_json(true, true), kAddBos));
    m.tokenizer.added_tokens[0].rstrip = true;  // an object entry as well as plain strings
    m.tokenizer.eos = m.tokenizer.added_tokens[1].content;
    m.vocab_size = static_cast<int64_t>(m.tokenizer.vocab.size()) + 3;  // padded rows are fine
    const ModelConfig back = parse_config(config_to_json(m), "test");
    const TokenizerConfig& t = back.tokenizer;
    CHECK(t.kind == m.tokenizer.kind);
    CHECK(t.vocab == m.tokenizer.vocab);
    CHECK(t.merges == m.tokenizer.merges);
    CHECK(t.unk == m.tokenizer.unk);
    CHECK(t.split_regex == m.tokenizer.split_regex);
    CHECK(t.nfc == m.tokenizer.nfc);
    CHECK(t.space_prefix == m.tokenizer.space_prefix);
    CHECK(t.metaspace_split == m.tokenizer.metaspace_split);
    CHECK(t.byte_fallback == m.tokenizer.byte_fallback);
    CHECK(t.ignore_merges == m.tokenizer.ignore_merges);
    CHECK(t.added_tokens == m.tokenizer.added_tokens);
    CHECK(t.bos == m.tokenizer.bos);
    CHECK(t.eos == m.tokenizer.eos);
    const std::string text = "Hi 12345 we'll</s>ok";
    CHECK(ids_of(make_tokenizer(t)->encode(text)) ==
          ids_of(make_tokenizer(m.tokenizer)->encode(text)));
  }
}

TEST_CASE("Generated text decodes the tokenizer.json kinds back to text", "[hf-bpe]") {
  const auto model_with = [](const TokenizerConfig& t) {
    ModelConfig c;
    c.architecture = Architecture::Decoder;
    c.tokenizer = t;
    c.vocab_size = static_cast<int64_t>(t.vocab.size());
    c.d_model = 8;
    c.n_heads = 2;
    c.d_ff = 16;
    c.n_layers = 1;
    c.max_positions = 32;
    return Model(c, init_params(c, 1));
  };
  // Byte-level: every token's bytes; the added tokens as written.
  const Model llama3 = model_with(read(write_tokenizer_dir("decode-bl", llama3_tokenizer_json())));
  const std::string text = "DON'TS 12345 we'll \n\n<|eot_id|>ok";
  CHECK(decode_tokens(llama3, llama3.tokenizer().encode(text)) == "<|begin_of_text|>" + text);
  // SentencePiece: <s> ▁Hi ▁ <0xE2> <0x82> <0xAC> 1 ▁Hi: "▁" is a space, the byte tokens
  // make "€", and the "▁" put in front of the text is dropped again.
  const Model llama2 = model_with(
      read(write_tokenizer_dir("decode-sp", llama2_tokenizer_json(true, false), kAddBos)));
  CHECK(decode_tokens(llama2, llama2.tokenizer().encode("Hi €1 Hi")) == "<s>Hi €1 Hi");
}

TEST_CASE("The tokenizer.json kinds' config keys are strict", "[hf-bpe]") {
  const auto parse = [](const std::string& tokenizer) {
    return parse_config(R"({"architecture": "decoder", "vocab_size": 300, "tokenizer": )" +
                            tokenizer + "}",
                        "test.json");
  };
  CHECK_THROWS_WITH(parse(R"({"type": "sentencepiece_bpe", "byte_fallbak": true})"),
                    Catch::Contains("did you mean \"byte_fallback\""));
  CHECK_THROWS_WITH(
      parse(R"({"type": "sentencepiece_bpe", "vocab": ["a"], "unk": "a",
                "added_tokens": [{"content": "a", "rstirp": true}]})"),
      Catch::Contains("did you mean \"rstrip\""));
  CHECK_THROWS_WITH(parse(R"({"type": "byte_level_bpe", "split_regex": "llama2"})"),
                    Catch::Contains("tokenizer.split_regex") && Catch::Contains("\"llama3\""));
  CHECK_THROWS_WITH(parse(R"({"type": "sentencepiece_bpe", "vocab": ["a"], "unk": "a",
                              "bos": "<s>"})"),
                    Catch::Contains("tokenizer.bos \"<s>\" is not in"));
  CHECK_THROWS_WITH(parse(R"({"type": "sentencepiece_bpe", "vocab": ["a"], "unk": ""})"),
                    Catch::Contains("needs tokenizer.unk"));
  CHECK_THROWS_WITH(parse(R"({"type": "words", "vocab": ["<unk>"], "byte_fallback": true})"),
                    Catch::Contains("belong to the tokenizer.json types"));
}

TEST_CASE("Llama-family tokenizer.json: bad files are refused naming the file and the part",
          "[hf-bpe]") {
  const auto refused = [](const std::string& name, const json& j) {
    try {
      read(write_tokenizer_dir(name, j));
    } catch (const AtlasError& e) {
      const std::string message = e.what();
      CHECK(message.find("tokenizer.json") != std::string::npos);
      return message;
    }
    FAIL("accepted: " << j.dump().substr(0, 200));
    return std::string();
  };
  const auto with = [](const std::string& pointer, const json& value) {
    json j = llama3_tokenizer_json();
    j[json::json_pointer(pointer)] = value;
    return j;
  };
  json no_model = llama3_tokenizer_json();
  no_model.erase("model");
  CHECK_THAT(refused("no-model", no_model), Catch::Contains("has no \"model\" object"));
  CHECK_THAT(refused("unigram", with("/model/type", "Unigram")),
             Catch::Contains("model.type is \"Unigram\""));
  CHECK_THAT(refused("whitespace", with("/pre_tokenizer", {{"type", "Whitespace"}})),
             Catch::Contains("pre-tokenizer type \"Whitespace\" is not supported"));
  CHECK_THAT(refused("regex", with("/pre_tokenizer/pretokenizers/0/pattern/Regex", "\\w+")),
             Catch::Contains("the Split regex \"\\w+\" is not one this tool implements"));
  CHECK_THAT(refused("lowercase", with("/normalizer", {{"type", "Lowercase"}})),
             Catch::Contains("normalizer type \"Lowercase\" is not supported"));
  CHECK_THAT(refused("merge", with("/model/merges/0", json::array({"D", "zz"}))),
             Catch::Contains("model.merges[0]") && Catch::Contains("\"zz\" is not in the vocab"));
  // A vocab whose keys are not token strings: a list of [token, id] pairs, or ids as strings.
  CHECK_THAT(refused("vocab-list", with("/model/vocab", json::array({json::array({"a", 0}), json::array({"b", 1})}))),
             Catch::Contains("model.vocab must be a JSON object"));
  CHECK_THAT(refused("vocab-id", with("/model/vocab", {{"a", "0"}})),
             Catch::Contains("the id of \"a\" is not an integer"));
  CHECK_THAT(refused("gap", with("/added_tokens/1/id", 280)),
             Catch::Contains("without gaps"));
  CHECK_THAT(refused("roberta", with("/post_processor", {{"type", "RobertaProcessing"}})),
             Catch::Contains("post-processor type \"RobertaProcessing\""));

  const fs::path empty = hf_test::fresh_dir("no-tokenizer");
  CHECK_THROWS_WITH(read(empty, "gemma"),
                    Catch::Contains("tokenizer.json: missing") &&
                        Catch::Contains("tokenizer.model"));
  CHECK_THROWS_WITH(read(empty, "t5"), Catch::Contains("model_type \"t5\""));
}
