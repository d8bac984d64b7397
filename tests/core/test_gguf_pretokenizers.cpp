// llama.cpp's pre-tokenizer split rules for GGUF files (core/tokenizers/llamacpp_pretokenize.h)
// and the pattern engine under them (core/tokenizers/split_pattern.h). The expected pieces are
// worked out by hand from llama.cpp's patterns, alternative by alternative, in the comments.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/formats/gguf.h"
#include "core/formats/gguf_tokenizer.h"
#include "core/tensor/error.h"
#include "core/tokenizers/hf_pretokenize.h"
#include "core/tokenizers/llamacpp_pretokenize.h"
#include "core/tokenizers/split_pattern.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using namespace gguf_test;
using Pieces = std::vector<std::string>;

namespace {

Pieces split_pieces(SplitRegex rule, std::string_view text) {
  Pieces out;
  for (const auto& [b, e] : split_pretokenize(rule, text)) out.emplace_back(text.substr(b, e - b));
  return out;
}

Pieces pattern_pieces(std::vector<std::string_view> patterns, std::string_view text) {
  std::vector<SplitPattern> compiled;
  for (const std::string_view p : patterns) compiled.emplace_back(p);
  Pieces out;
  for (const auto& [b, e] : split_by_patterns(text, compiled)) out.emplace_back(text.substr(b, e - b));
  return out;
}

// The shared test string: a contraction in capitals, a 7-digit run, accented Latin joined to
// CJK by a hyphen, an emoji (So) before "!!", a whitespace run with two newlines, a tab.
//   W e ' R E _ 1 2 3 4 5 6 7 _ d é j à - v u 你 好 _ 🙂 ! ! _ _ \n \n _ _ x \t y
constexpr std::string_view kMixedText = "We'RE 1234567 déjà-vu你好 🙂!!  \n\n  x\ty";

// A "gpt2" GGUF vocabulary of the 256 byte symbols, with tokenizer.ggml.pre = `pre` (none
// when `pre` is null).
Writer byte_vocab_writer(const char* pre) {
  Writer w;
  w.kv("general.architecture", str("llama")).kv("tokenizer.ggml.model", str("gpt2"));
  if (pre) w.kv("tokenizer.ggml.pre", str(pre));
  w.kv("tokenizer.ggml.tokens", strings(hf_test::byte_symbols()))
      .kv("tokenizer.ggml.merges", strings({}))
      .kv("tokenizer.ggml.bos_token_id", u32(0));
  return w;
}

TokenizerConfig from(const Writer& w) {
  return tokenizer_from_gguf(GgufFile::parse(w.build(), "test.gguf"));
}

}  // namespace

TEST_CASE("llama.cpp llama3 rule: contractions, 3-digit groups, a word takes one leading mark",
          "[gguf-tok][pretok]") {
  // '[rR][eE] takes "'RE"; " " before a digit is \s+ alone; \p{N}{1,3}; [^\r\n\p{L}\p{N}]?\p{L}+
  // takes " déjà" and "-vu你好" (CJK are letters); " ?[^\s\p{L}\p{N}]+" takes " 🙂!!";
  // \s*[\r\n]+ ends at the last newline; \s+(?!\S) leaves the space before "x" to " x".
  const Pieces expected = {"We", "'RE", " ", "123", "456", "7", " déjà", "-vu你好", " 🙂!!",
                           "  \n\n", " ", " x", "\ty"};
  CHECK(split_pieces(SplitRegex::LlamaCppLlama3, kMixedText) == expected);
  CHECK(pattern_pieces(llamacpp_split_patterns(SplitRegex::LlamaCppLlama3), kMixedText) == expected);
  // llama.cpp spells the contractions in ASCII: "'ſ" (U+017F, which folds to "s") is no
  // contraction there, so "'ſt" is one word; tokenizer.json's (?i:'s) takes "'ſ".
  CHECK(split_pieces(SplitRegex::LlamaCppLlama3, "x'ſt") == Pieces{"x", "'ſt"});
  CHECK(split_pieces(SplitRegex::Llama3, "x'ſt") == Pieces{"x", "'ſ", "t"});
}

TEST_CASE("llama.cpp qwen2 rule: as llama3 with one digit a piece", "[gguf-tok][pretok]") {
  const Pieces expected = {"We", "'RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà",
                           "-vu你好", " 🙂!!", "  \n\n", " ", " x", "\ty"};
  CHECK(split_pieces(SplitRegex::LlamaCppQwen2, kMixedText) == expected);
  CHECK(pattern_pieces(llamacpp_split_patterns(SplitRegex::LlamaCppQwen2), kMixedText) == expected);
}

TEST_CASE("llama.cpp gpt-2 rule: case-sensitive contractions, digit runs whole",
          "[gguf-tok][pretok]") {
  // "'R" is no contraction: "'" is a symbol run, "RE" a word; " ?\p{N}+" keeps the run whole;
  // "-" stops at the letter; \s+(?!\S) gives 5 of the 6 whitespace; a lone "\t" before "y"
  // matches nothing and is a piece of its own.
  const Pieces expected = {"We", "'", "RE", " 1234567", " déjà", "-", "vu你好", " 🙂!!",
                           "  \n\n ", " x", "\t", "y"};
  CHECK(split_pieces(SplitRegex::Gpt2, kMixedText) == expected);
  CHECK(pattern_pieces(llamacpp_split_patterns(SplitRegex::Gpt2), kMixedText) == expected);
}

TEST_CASE("llama.cpp default rule: punctuation runs first, digits apart and in threes",
          "[gguf-tok][pretok]") {
  // 1. [\p{P}$+<=>^~|]+ isolates "'", "-", "!!" (🙂 is a symbol, not \p{P}).
  // 2. GPT-2's pattern on each piece: "RE 1234567 déjà" -> "RE" " 1234567" " déjà";
  //    "vu你好 🙂" -> "vu你好" " 🙂"; the whitespace piece as in the gpt-2 rule.
  // 3. \p{N}+ parts " " from "1234567". 4. [0-9]{3}: "123" "456" and the rest "7".
  const Pieces expected = {"We", "'", "RE", " ", "123", "456", "7", " déjà", "-", "vu你好",
                           " 🙂", "!!", "  \n\n ", " x", "\t", "y"};
  CHECK(split_pieces(SplitRegex::LlamaCppDefault, kMixedText) == expected);
  // "`" is no \p{P} (it is Sk), so step 1 leaves "a`b" whole and GPT-2 makes it a symbol run;
  // Arabic-Indic digits are \p{N} but not [0-9]: parted from the space, never grouped.
  CHECK(split_pieces(SplitRegex::LlamaCppDefault, "a`b ١٢٣٤") == Pieces{"a", "`", "b", " ", "١٢٣٤"});
}

TEST_CASE("llama.cpp falcon rule: the default's steps with \"`\" and without \\p{N}+",
          "[gguf-tok][pretok]") {
  // Step 3 [0-9]{3} finds "123" one code point into " 1234567": " " is left before it.
  CHECK(split_pieces(SplitRegex::LlamaCppFalcon, kMixedText) ==
        Pieces{"We", "'", "RE", " ", "123", "456", "7", " déjà", "-", "vu你好", " 🙂", "!!",
               "  \n\n ", " x", "\t", "y"});
  // "`" is isolated by step 1; " ١٢٣٤" stays with its space (no \p{N}+ step).
  CHECK(split_pieces(SplitRegex::LlamaCppFalcon, "a`b ١٢٣٤") == Pieces{"a", "`", "b", " ١٢٣٤"});
}

TEST_CASE("llama.cpp starcoder rule (smollm, refact, command-r, ...): every digit apart, then "
          "GPT-2", "[gguf-tok][pretok]") {
  // \p{N} first: "We'RE " | 1 | .. | 7 | " déjà-vu你好 🙂!!  \n\n  x\ty"; GPT-2 then leaves the
  // trailing space of "We'RE " on its own (\s+(?!\S) at the end of the piece).
  CHECK(split_pieces(SplitRegex::LlamaCppStarcoder, kMixedText) ==
        Pieces{"We", "'", "RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà", "-", "vu你好",
               " 🙂!!", "  \n\n ", " x", "\t", "y"});
}

TEST_CASE("llama.cpp deepseek-llm rule: newlines, cased-script words, ASCII punctuation, CJK",
          "[gguf-tok][pretok]") {
  // 1. [\r\n] isolates each newline.
  // 2. \s?[cased letters]+ : "We" "RE" " déjà" "vu" " x" "\ty" match; the text between them
  //    (" 1234567", "-", "你好 🙂!!  ", " ") is left as pieces.
  // 3. \s?[!-/:-~ fullwidth ..]+ : ":-~" covers ASCII letters, so "We" "RE" "vu" stay, but
  //    " déjà" breaks at the non-ASCII letters: " d" "é" "j" "à"; "!!" leaves "你好 🙂" and "  ".
  // 4. \s+$ changes nothing. 5. The CJK block takes "你好" from "你好 🙂". 6. \p{N}+.
  CHECK(split_pieces(SplitRegex::LlamaCppDeepseekLlm, kMixedText) ==
        Pieces{"We", "'", "RE", " ", "1234567", " d", "é", "j", "à", "-", "vu", "你好", " 🙂",
               "!!", "  ", "\n", "\n", " ", " x", "\ty"});
}

TEST_CASE("llama.cpp deepseek-coder rule: letters, punctuation, CJK, single digits",
          "[gguf-tok][pretok]") {
  // 2. \s?\p{L}+ : "We" "RE" " déjà" "vu你好" " x" "\ty"; 3. \s?\p{P}+ : "'" "-" "!!" (🙂 is
  // no \p{P}); 4. CJK parts "你好" from "vu"; 5. \p{N} one digit a piece.
  CHECK(split_pieces(SplitRegex::LlamaCppDeepseekCoder, kMixedText) ==
        Pieces{"We", "'", "RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà", "-", "vu",
               "你好", " 🙂", "!!", "  ", "\n", "\n", " ", " x", "\ty"});
}

TEST_CASE("llama.cpp bloom and viking rules: runs between whitespace and sentence punctuation",
          "[gguf-tok][pretok]") {
  // " ?[^(\s|.,!?…。，、।۔،)]+": "-" and CJK belong to the run; "!" does not, and what no match
  // covers ("!!  \n\n " up to " x") is one piece.
  CHECK(split_pieces(SplitRegex::LlamaCppBloom, kMixedText) ==
        Pieces{"We'RE", " 1234567", " déjà-vu你好", " 🙂", "!!  \n\n ", " x", "\t", "y"});
  CHECK(split_pieces(SplitRegex::LlamaCppBloom, "一。二，三") == Pieces{"一", "。", "二", "，", "三"});
  // viking: then \p{N}, one digit a piece.
  CHECK(split_pieces(SplitRegex::LlamaCppViking, kMixedText) ==
        Pieces{"We'RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà-vu你好", " 🙂",
               "!!  \n\n ", " x", "\t", "y"});
}

TEST_CASE("llama.cpp tekken and gpt-4o rules: case-run words", "[gguf-tok][pretok]") {
  // Words are [^\r\n\p{L}\p{N}]? then capitals* lowercase+ (or capitals+ lowercase*), where a
  // non-ASCII letter counts as both. "'RE": the first form fails (no lowercase), the second
  // takes "'" "RE". Digits one at a time.
  CHECK(split_pieces(SplitRegex::LlamaCppTekken, kMixedText) ==
        Pieces{"We", "'RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà", "-vu你好", " 🙂!!",
               "  \n\n", " ", " x", "\ty"});
  // "HelloWORLDFoo": capitals* takes "WORLDF" before lowercase+ "oo".
  CHECK(split_pieces(SplitRegex::LlamaCppTekken, "HelloWORLDFoo don't") ==
        Pieces{"Hello", "WORLDFoo", " don", "'t"});
  // gpt-4o: a contraction joins the word before it; digits in threes.
  CHECK(split_pieces(SplitRegex::LlamaCppGpt4o, kMixedText) ==
        Pieces{"We'RE", " ", "123", "456", "7", " déjà", "-vu你好", " 🙂!!", "  \n\n", " ", " x",
               "\ty"});
  CHECK(split_pieces(SplitRegex::LlamaCppGpt4o, "HelloWORLDFoo don't") ==
        Pieces{"Hello", "WORLDFoo", " don't"});
}

TEST_CASE("llama.cpp chameleon rule: whitespace pairs, digits and punctuation isolated",
          "[gguf-tok][pretok]") {
  // ([\t\n]|    |  ) takes "  " "\n" "\n" "  " "\t"; \p{N} each digit; then each punctuation
  // character alone ("!" "!"); GPT-2 last ("RE " -> "RE" " ").
  CHECK(split_pieces(SplitRegex::LlamaCppChameleon, kMixedText) ==
        Pieces{"We", "'", "RE", " ", "1", "2", "3", "4", "5", "6", "7", " déjà", "-", "vu你好",
               " 🙂", "!", "!", "  ", "\n", "\n", "  ", "x", "\t", "y"});
}

TEST_CASE("llama.cpp's smaller rules: jais-2, seed-coder, ufakzeka, laguna, minicpm5",
          "[gguf-tok][pretok]") {
  // jais-2 gives whitespace back in powers of two: 7 spaces = \s{4}(?!\S), \s{1,2}(?!\S) = 2,
  // and the last joins "b"; llama3 keeps 6 together.
  CHECK(split_pieces(SplitRegex::LlamaCppJais2, "a       b") == Pieces{"a", "    ", "  ", " b"});
  CHECK(split_pieces(SplitRegex::LlamaCppLlama3, "a       b") == Pieces{"a", "      ", " b"});
  // seed-coder's symbol run takes no newline after it; qwen2's does.
  CHECK(split_pieces(SplitRegex::LlamaCppSeedCoder, "a.\nb") == Pieces{"a", ".", "\n", "b"});
  CHECK(split_pieces(SplitRegex::LlamaCppQwen2, "a.\nb") == Pieces{"a", ".\n", "b"});
  // ufakzeka has no contractions: "'sx" is a word with its leading mark.
  CHECK(split_pieces(SplitRegex::LlamaCppUfakzeka, "it'sx") == Pieces{"it", "'sx"});
  CHECK(split_pieces(SplitRegex::LlamaCppQwen2, "it'sx") == Pieces{"it", "'s", "x"});
  // laguna cuts at newlines first, so " \n" cannot be one piece.
  CHECK(split_pieces(SplitRegex::LlamaCppLaguna, "a \nb") == Pieces{"a", " ", "\n", "b"});
  CHECK(split_pieces(SplitRegex::LlamaCppBailingMoe, "it's 12") == Pieces{"it", "'s", " ", "1", "2"});
  // minicpm5: \p{N}{1,3} first, so the later \p{N}+ cannot join the groups again.
  CHECK(split_pieces(SplitRegex::LlamaCppMiniCpm5, "x 1234567") ==
        Pieces{"x", " ", "123", "456", "7"});
}

TEST_CASE("the hand-written llama3, qwen2 and gpt-2 splitters agree with llama.cpp's patterns",
          "[gguf-tok][pretok]") {
  const std::vector<std::string_view> texts = {
      "", " ", "   ", "\n", " \r\n \t", "a", "'", "'s", "I'M", "x'LL'd", "a  b", "a \t b",
      "1234", " 12 345 6789", "¡Hola, señor!", "ǅemal Ǆ", "١٢٣ ٤", "\u00A0word\u2003 x\u3000",
      "😀😀 a😀", "a.\n\nb...\r\n", "tab\there\tand  there ", "混合 text 和 数字123"};
  for (const SplitRegex rule : {SplitRegex::LlamaCppLlama3, SplitRegex::LlamaCppQwen2,
                                SplitRegex::Gpt2}) {
    for (const std::string_view t : texts) {
      INFO("rule " << int(rule) << " text \"" << std::string(t) << "\"");
      CHECK(split_pieces(rule, t) == pattern_pieces(llamacpp_split_patterns(rule), t));
    }
  }
}

TEST_CASE("split patterns: llama.cpp's regex dialect", "[gguf-tok][pretok]") {
  // $ is the end of the piece; (?!..) and (?=..) look without consuming; text no pattern
  // matches is a piece; each later pattern splits the pieces of the earlier one.
  CHECK(pattern_pieces({R"(\s+$)"}, "a b  ") == Pieces{"a b", "  "});
  CHECK(pattern_pieces({R"(a(?=b))"}, "abac") == Pieces{"a", "bac"});
  CHECK(pattern_pieces({R"(\d{1,3}(?!\d))"}, "12345") == Pieces{"12", "345"});
  CHECK(pattern_pieces({"b", "a"}, "aba") == Pieces{"a", "b", "a"});
  CHECK(pattern_pieces({R"(\bx)"}, "xax x") == Pieces{"x", "ax ", "x"});
  // Collapsed text: \p{L} is every letter, but an ASCII range never meets a non-ASCII one.
  CHECK(pattern_pieces({R"([\p{L}]+)"}, "éa1") == Pieces{"éa", "1"});
  CHECK(pattern_pieces({R"([^a-z\p{N}]+)"}, "éa1") == Pieces{"é", "a1"});
  // Code point text: literal ranges of any plane; non-ASCII whitespace reads as \v.
  CHECK(pattern_pieces({"[가-힣]+"}, "한국어 abc") == Pieces{"한국어", " abc"});
  CHECK(pattern_pieces({"[\u3000]"}, "a\u3000b") == Pieces{"a\u3000b"});
  CHECK(pattern_pieces({R"(\s)"}, "a\u3000b") == Pieces{"a", "\u3000", "b"});
}

TEST_CASE("split patterns: constructs the engine cannot run are refused by name",
          "[gguf-tok][pretok]") {
  CHECK_THROWS_WITH(SplitPattern(R"(\p{M}+)"), Catch::Contains("\\p{M}"));
  CHECK_THROWS_WITH(SplitPattern("a+?"), Catch::Contains("lazy"));
  CHECK_THROWS_WITH(SplitPattern("a*"), Catch::Contains("empty string"));
  CHECK_THROWS_WITH(SplitPattern("(ab)+"), Catch::Contains("one character wide"));
  CHECK_THROWS_WITH(SplitPattern(R"([\p{L}é])"), Catch::Contains("non-ASCII"));
  CHECK_THROWS_WITH(SplitPattern("(a"), Catch::Contains("unclosed"));
  // Every rule's own patterns build.
  for (int r = int(SplitRegex::Gpt2); r <= int(SplitRegex::LlamaCppMiniCpm5); ++r)
    for (const std::string_view p : llamacpp_split_patterns(SplitRegex(r)))
      CHECK_NOTHROW(SplitPattern(p));
}

TEST_CASE("GGUF tokenizer.ggml.pre: llama.cpp's names pick its rules, \"default\" and a missing "
          "key included", "[gguf-tok][pretok]") {
  const std::vector<std::pair<const char*, SplitRegex>> names = {
      {"default", SplitRegex::LlamaCppDefault},     {"llama3", SplitRegex::LlamaCppLlama3},
      {"llama-bpe", SplitRegex::LlamaCppLlama3},    {"dbrx", SplitRegex::LlamaCppLlama3},
      {"smaug-bpe", SplitRegex::LlamaCppLlama3},    {"chatglm-bpe", SplitRegex::LlamaCppLlama3},
      {"qwen2", SplitRegex::LlamaCppQwen2},         {"stablelm2", SplitRegex::LlamaCppQwen2},
      {"gpt-2", SplitRegex::Gpt2},                  {"phi-2", SplitRegex::Gpt2},
      {"mpt", SplitRegex::Gpt2},                    {"olmo", SplitRegex::Gpt2},
      {"jais", SplitRegex::Gpt2},                   {"smollm", SplitRegex::LlamaCppStarcoder},
      {"starcoder", SplitRegex::LlamaCppStarcoder}, {"refact", SplitRegex::LlamaCppStarcoder},
      {"command-r", SplitRegex::LlamaCppStarcoder}, {"codeshell", SplitRegex::LlamaCppStarcoder},
      {"exaone", SplitRegex::LlamaCppStarcoder},    {"minerva-7b", SplitRegex::LlamaCppStarcoder},
      {"falcon", SplitRegex::LlamaCppFalcon},       {"deepseek-llm", SplitRegex::LlamaCppDeepseekLlm},
      {"deepseek-coder", SplitRegex::LlamaCppDeepseekCoder},
      {"bloom", SplitRegex::LlamaCppBloom},         {"poro-chat", SplitRegex::LlamaCppBloom},
      {"gpt3-finnish", SplitRegex::LlamaCppBloom},  {"viking", SplitRegex::LlamaCppViking},
      {"tekken", SplitRegex::LlamaCppTekken},       {"chameleon", SplitRegex::LlamaCppChameleon},
      {"gpt-4o", SplitRegex::LlamaCppGpt4o}};
  for (const auto& [name, rule] : names) {
    INFO(name);
    const TokenizerConfig c = from(byte_vocab_writer(name));
    CHECK(c.kind == TokenizerKind::ByteLevelBpe);
    CHECK(c.split_regex == rule);
  }
  // No key: llama.cpp's default rule (it warns that quality may suffer; it does not refuse).
  const TokenizerConfig missing = from(byte_vocab_writer(nullptr));
  CHECK(missing.split_regex == SplitRegex::LlamaCppDefault);
  CHECK_FALSE(missing.ignore_merges);
  // llama.cpp's flags: llama3 and tekken look a piece up whole and add the BOS unless the file
  // says otherwise; the default rule does neither.
  const TokenizerConfig t = from(byte_vocab_writer("tekken"));
  CHECK(t.ignore_merges);
  CHECK(t.bos == hf_test::byte_symbols()[0]);
  CHECK(missing.bos.empty());
}

TEST_CASE("GGUF tokenizer.ggml.pre that llama.cpp lacks or Atlas cannot run is refused by name",
          "[gguf-tok][pretok]") {
  // "gpt2" (no hyphen) is no llama.cpp pre type; kimi-k2 and qwen35 are, but need llama.cpp's
  // custom code or \p{M}.
  for (const char* name : {"gpt2", "kimi-k2", "qwen35", "no-such-pre"}) {
    INFO(name);
    CHECK_THROWS_WITH(from(byte_vocab_writer(name)),
                      Catch::Contains("test.gguf") &&
                          Catch::Contains("tokenizer.ggml.pre \"" + std::string(name) + "\"") &&
                          Catch::Contains("\"llama-bpe\"") && Catch::Contains("\"default\"") &&
                          Catch::Contains("\"tekken\""));
  }
}
