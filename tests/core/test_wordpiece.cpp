// BERT WordPiece (core/tokenizers/wordpiece_tokenizer.h) and its file reader. Every expected split is
// worked out by hand from google-research/bert tokenization.py (including its own examples).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/tensor/error.h"
#include "core/formats/hf/hf_tokenizer_files.h"
#include "core/tokenizers/tokenizer.h"
#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/wordpiece_tokenizer.h"
#include "tests/core/temp_dir.h"

using namespace atlas;
using atlas::test::TempDir;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

namespace {

// tokenization_test.py's vocab, plus what the other cases need.
const Strings kVocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa",
                        "un", "runn", "##ing", ",", "##aff", "##able", "cafe", "Café", "hello",
                        "world", "!", "中", "文", "$", "5", "abcdef", "οδος"};

TokenizerConfig config(bool lowercase, bool strip, int64_t max_chars = 100) {
  TokenizerConfig c;
  c.kind = TokenizerKind::WordPiece;
  c.vocab = kVocab;
  c.unk = "[UNK]";
  c.lowercase = lowercase;
  c.strip_accents = strip;
  c.max_chars_per_word = max_chars;
  return c;
}

Strings labels(const std::vector<TokenInfo>& tokens) {
  Strings out;
  for (const TokenInfo& t : tokens) out.push_back(t.label);
  return out;
}

}  // namespace

TEST_CASE("BERT basic tokenizer: clean, split, lower-case, strip accents", "[wordpiece]") {
  // tokenization_test.py test_basic_tokenizer_lower.
  CHECK(bert_basic_tokenize(" \tHeLLo!how  \n Are yoU?  ", true, true) ==
        Strings{"hello", "!", "how", "are", "you", "?"});
  CHECK(bert_basic_tokenize("H\u00E9llo", true, true) == Strings{"hello"});
  // test_basic_tokenizer_no_lower: case and accents kept.
  CHECK(bert_basic_tokenize(" \tHeLLo!how  \n Are yoU?  ", false, false) ==
        Strings{"HeLLo", "!", "how", "Are", "yoU", "?"});
  CHECK(bert_basic_tokenize("Caf\u00E9", false, false) == Strings{"Caf\u00E9"});
  // test_chinese: each CJK ideograph its own word.
  CHECK(bert_basic_tokenize("ah\u535A\u63A8zz", true, true) ==
        Strings{"ah", "\u535A", "\u63A8", "zz"});
  // Punctuation: ASCII symbols count ("$"), and Unicode P* ("¿", "。").
  CHECK(bert_basic_tokenize("hello,world! $5 \u00BFqu\u00E9?", true, true) ==
        Strings{"hello", ",", "world", "!", "$", "5", "\u00BF", "que", "?"});
  CHECK(bert_basic_tokenize("a\u3002b", false, false) == Strings{"a", "\u3002", "b"});
  // Controls and format characters vanish; U+00A0 (Zs) separates words.
  CHECK(bert_basic_tokenize("a\x01" "b c\u200Bd e\u00A0f", false, false) ==
        Strings{"ab", "cd", "e", "f"});
  // Python's str.lower: final sigma at a word's end, and İ -> i + U+0307 (then stripped).
  CHECK(bert_basic_tokenize("\u039F\u0394\u039F\u03A3", true, false) ==
        Strings{"\u03BF\u03B4\u03BF\u03C2"});
  CHECK(bert_basic_tokenize("\u0130", true, true) == Strings{"i"});
  // NFD splits a Hangul syllable into jamo, as unicodedata.normalize("NFD") does.
  CHECK(bert_basic_tokenize("\uD55C", true, true) == Strings{"\u1112\u1161\u11AB"});
  CHECK_THROWS_WITH(bert_basic_tokenize("ok\xC0", true, true), Catch::Contains("byte 2"));
}

TEST_CASE("WordPiece: greedy longest match with ## continuations", "[wordpiece]") {
  const WordPieceTokenizer tok(config(true, true));
  // tokenization_test.py test_full_tokenizer: "UNwant\u00E9d,running".
  CHECK(labels(tok.encode("UNwant\u00E9d,running")) ==
        Strings{"[CLS]", "un", "##want", "##ed", ",", "runn", "##ing", "[SEP]"});
  CHECK(labels(tok.encode("unaffable")) == Strings{"[CLS]", "un", "##aff", "##able", "[SEP]"});
  CHECK(labels(tok.encode("Caf\u00E9")) == Strings{"[CLS]", "cafe", "[SEP]"});
  CHECK(labels(tok.encode("hello,world!")) ==
        Strings{"[CLS]", "hello", ",", "world", "!", "[SEP]"});
  CHECK(labels(tok.encode("\u4E2D\u6587")) == Strings{"[CLS]", "\u4E2D", "\u6587", "[SEP]"});
  // No piece matches "unwantedx"'s tail -> the whole word is unknown, not a partial split.
  CHECK(labels(tok.encode("unwantedx runn")) == Strings{"[CLS]", "[UNK]", "runn", "[SEP]"});
  const std::vector<TokenInfo> ids = tok.encode("want");
  REQUIRE(ids.size() == 3);
  CHECK(ids[0].id == 2);
  CHECK(ids[1].id == 4);
  CHECK(ids[2].id == 3);
  CHECK(tok.label(5) == "##want");
}

TEST_CASE("WordPiece: special tokens typed in the text stay whole, case-sensitively", "[wordpiece]") {
  TokenizerConfig c = config(true, true);
  c.vocab.push_back("[MASK]");
  const WordPieceTokenizer tok(c);
  // As BertTokenizer: the text around a special token is lower-cased and split; the token is not.
  CHECK(labels(tok.encode("Hello [MASK] world[SEP]want")) ==
        Strings{"[CLS]", "hello", "[MASK]", "world", "[SEP]", "want", "[SEP]"});
  CHECK(tok.encode("[MASK]")[1].id == int32_t(c.vocab.size()) - 1);
  // Lower-case "[mask]" is ordinary text: "[", "mask" (unknown here), "]".
  CHECK(labels(tok.encode("[mask]")) == Strings{"[CLS]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"});
  // A vocab without [MASK] treats it as text too.
  CHECK(labels(WordPieceTokenizer(config(true, true)).encode("[MASK]")) ==
        Strings{"[CLS]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"});
  CHECK(labels(tok.encode("")) == Strings{"[CLS]", "[SEP]"});
  CHECK(labels(tok.encode("[PAD][PAD]")) == Strings{"[CLS]", "[PAD]", "[PAD]", "[SEP]"});
}

TEST_CASE("WordPiece: cased vocab keeps accents and case", "[wordpiece]") {
  const WordPieceTokenizer tok(config(false, false));
  CHECK(labels(tok.encode("Caf\u00E9 cafe")) == Strings{"[CLS]", "Caf\u00E9", "cafe", "[SEP]"});
  CHECK(labels(tok.encode("Hello")) == Strings{"[CLS]", "[UNK]", "[SEP]"});  // no "Hello"
}

TEST_CASE("WordPiece: a word over max_chars_per_word is unknown", "[wordpiece]") {
  CHECK(labels(WordPieceTokenizer(config(true, true, 6)).encode("abcdef")) ==
        Strings{"[CLS]", "abcdef", "[SEP]"});
  CHECK(labels(WordPieceTokenizer(config(true, true, 5)).encode("abcdef")) ==
        Strings{"[CLS]", "[UNK]", "[SEP]"});
}

TEST_CASE("WordPiece: sentence pairs carry token types", "[wordpiece]") {
  const auto tok = make_tokenizer(config(true, true));
  const std::vector<TokenInfo> t = tok->encode_pair("hello world", "want!");
  CHECK(labels(t) == Strings{"[CLS]", "hello", "world", "[SEP]", "want", "!", "[SEP]"});
  std::vector<int32_t> types;
  for (const TokenInfo& x : t) types.push_back(x.type);
  CHECK(types == std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1});
  for (const TokenInfo& x : tok->encode("hello")) CHECK(x.type == 0);
  // Tokenizers without pairs say so.
  CHECK_THROWS_WITH(make_tokenizer(TokenizerConfig{})->encode_pair("a", "b"),
                    Catch::Contains("no sentence pairs"));
}

TEST_CASE("WordPiece tokenizer files: vocab.txt, tokenizer_config.json, tokenizer.json",
          "[wordpiece]") {
  TempDir dir;
  const std::string d = dir.path.string();
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "bert", "{}"), Catch::Contains("vocab.txt: missing"));
  std::string vocab_txt;
  for (const std::string& v : kVocab) vocab_txt += v + "\n";
  dir.write("vocab.txt", vocab_txt);
  TokenizerConfig c = read_hf_tokenizer(d, "bert", "{}");
  CHECK(c.kind == TokenizerKind::WordPiece);
  CHECK(c.vocab == kVocab);
  CHECK(c.lowercase);  // transformers' default
  CHECK(c.strip_accents);
  dir.write("tokenizer_config.json", R"({"do_lower_case": false})");
  c = read_hf_tokenizer(d, "distilbert", "{}");
  CHECK(!c.lowercase);
  CHECK(!c.strip_accents);  // null strip_accents follows do_lower_case
  dir.write("tokenizer_config.json", R"({"do_lower_case": true, "strip_accents": false})");
  c = read_hf_tokenizer(d, "bert", "{}");
  CHECK(c.lowercase);
  CHECK(!c.strip_accents);
  dir.write("tokenizer_config.json", R"({"do_lower_case": "yes"})");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "bert", "{}"),
                    Catch::Contains("tokenizer_config.json") && Catch::Contains("do_lower_case"));
  dir.write("tokenizer_config.json", "{");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "bert", "{}"),
                    Catch::Contains("tokenizer_config.json: is not valid JSON"));
  fs::remove(dir.path / "tokenizer_config.json");
  dir.write("vocab.txt", "[UNK]\n[SEP]\nhello\n");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "bert", "{}"),
                    Catch::Contains("vocab.txt") && Catch::Contains("[CLS]"));
  dir.write("vocab.txt", "[UNK]\n[CLS]\n[SEP]\nbad\xFF\n");
  CHECK_THROWS_WITH(read_hf_tokenizer(d, "bert", "{}"),
                    Catch::Contains("vocab.txt: line 4 is not valid UTF-8"));

  // No file says do_lower_case and the vocab is mostly capitalised words: a cased vocab.
  dir.write("vocab.txt", "[UNK]\n[CLS]\n[SEP]\nThe\nHouse\nParis\nthe\n");
  c = read_hf_tokenizer(d, "bert", "{}");
  CHECK(!c.lowercase);
  CHECK(labels(make_tokenizer(c)->encode("The house")) ==
        Strings{"[CLS]", "The", "[UNK]", "[SEP]"});

  // tokenizer.json wins when present; its normalizer says lowercase / strip_accents.
  dir.write("tokenizer.json", R"({"model": {"type": "WordPiece", "unk_token": "[UNK]",
      "continuing_subword_prefix": "##", "max_input_chars_per_word": 7,
      "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "caf": 3, "##e": 4}},
    "normalizer": {"type": "BertNormalizer", "lowercase": true, "strip_accents": null}})");
  c = read_hf_tokenizer(d, "bert", "{}");
  CHECK(c.vocab == Strings{"[UNK]", "[CLS]", "[SEP]", "caf", "##e"});
  CHECK(c.max_chars_per_word == 7);
  CHECK(c.strip_accents);
  CHECK(labels(make_tokenizer(c)->encode("CAF\u00C9")) == Strings{"[CLS]", "caf", "##e", "[SEP]"});
}

TEST_CASE("A wordpiece tokenizer round-trips through the project's config.json",
          "[wordpiece]") {
  ModelConfig m;
  m.tokenizer = config(false, true, 42);
  m.vocab_size = static_cast<int64_t>(kVocab.size());
  const ModelConfig back = parse_config(config_to_json(m), "test");
  CHECK(back.tokenizer.kind == TokenizerKind::WordPiece);
  CHECK(back.tokenizer.vocab == kVocab);
  CHECK(!back.tokenizer.lowercase);
  CHECK(back.tokenizer.strip_accents);
  CHECK(back.tokenizer.max_chars_per_word == 42);
  CHECK(back.tokenizer.unk == "[UNK]");
  m.tokenizer.cls = "[NOPE]";
  CHECK_THROWS_WITH(parse_config(config_to_json(m), "test"), Catch::Contains("[NOPE]"));
}

TEST_CASE("Unicode tables: categories, lower case and NFD of chosen characters",
          "[wordpiece][unicode]") {
  // Expected values from the Unicode 15.0 character database, looked up by hand.
  CHECK(unicode::is_letter(U'\u00E9'));   // é Ll
  CHECK(unicode::is_letter(U'\u4E2D'));   // 中 Lo
  CHECK(unicode::is_letter(U'\u02B0'));   // ʰ Lm
  CHECK(!unicode::is_letter(U'1'));
  CHECK(!unicode::is_letter(U'\u0301'));  // combining acute: Mn
  CHECK(unicode::is_number(U'\u0663'));   // Arabic-Indic three: Nd
  CHECK(unicode::is_number(U'\u00BD'));   // ½ No
  CHECK(unicode::is_number(U'\u216B'));   // Ⅻ Nl
  CHECK(!unicode::is_number(U'x'));
  CHECK(unicode::is_punctuation(U'\u00BF'));  // ¿ Po
  CHECK(unicode::is_punctuation(U'\u2014'));  // — Pd
  CHECK(unicode::is_punctuation(U'\u3002'));  // 。 Po
  CHECK(!unicode::is_punctuation(U'$'));      // Sc
  CHECK(unicode::is_nonspacing_mark(U'\u0301'));
  CHECK(!unicode::is_nonspacing_mark(U'\u0903'));  // Devanagari visarga: Mc
  CHECK(unicode::is_space_separator(U'\u3000'));
  CHECK(!unicode::is_space_separator(U'\n'));  // Cc
  CHECK(unicode::is_other(U'\u200B'));         // Cf
  CHECK(unicode::is_other(U'\u0378'));         // unassigned: Cn
  CHECK(unicode::is_other(U'\uE000'));         // private use: Co
  CHECK(!unicode::is_other(U'a'));
  CHECK(unicode::to_lower(U'\u03A9') == U'\u03C9');  // Ω -> ω
  CHECK(unicode::to_lower(U'\u00C4') == U'\u00E4');  // Ä -> ä
  CHECK(unicode::to_lower(U'\u0410') == U'\u0430');  // А -> а
  CHECK(unicode::to_lower(U'\u00DF') == U'\u00DF');  // ß has no lower-case mapping
  std::u32string nfd;
  unicode::append_nfd(nfd, U'\u00E9');
  CHECK(nfd == U"e\u0301");
  nfd.clear();
  unicode::append_nfd(nfd, U'\u01D6');  // ǖ = ü + macron = u + diaeresis + macron
  CHECK(nfd == U"u\u0308\u0304");
  nfd.clear();
  unicode::append_nfd(nfd, U'\uAC00');  // 가 = ᄀ + ᅡ (no final consonant)
  CHECK(nfd == U"\u1100\u1161");
  nfd.clear();
  unicode::append_nfd(nfd, U'x');
  CHECK(nfd == U"x");
}
