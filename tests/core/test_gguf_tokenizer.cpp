// The tokenizer of a GGUF file's tokenizer.ggml.* metadata (core/formats/gguf_tokenizer.h), on
// files written byte by byte (tests/core/gguf_test_util.h) with hand-made vocabularies; the
// expected merges and ids are derived in the comments.
#include <catch2/catch.hpp>

#include "core/formats/gguf.h"
#include "core/formats/gguf_tokenizer.h"
#include "core/tensor/error.h"
#include "core/tokenizers/hf_bpe_tokenizer.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::ids_of;
using namespace gguf_test;

namespace {

GgufFile parsed(const Writer& w) { return GgufFile::parse(w.build(), "test.gguf"); }

Value int_array(const std::vector<int32_t>& values) {
  std::vector<Value> v;
  for (const int32_t x : values) v.push_back(i32(x));
  return array(kI32, v);
}
Value float_array(const std::vector<float>& values) {
  std::vector<Value> v;
  for (const float x : values) v.push_back(f32(x));
  return array(kF32, v);
}

// A SentencePiece ("llama") vocabulary: 0 <unk> (type 2), 1 <s>, 2 </s> (control, 3),
// 3..258 <0x00>..<0xFF> (byte, 6), then 259 "▁", 260 "a", 261 "b", 262 "c", 263 "ab",
// 264 "bc", 265 "abc", 266 "▁abc" (normal, 1) with the scores below.
Writer spm_writer() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    types.push_back(6);
    scores.push_back(0);
  }
  const std::vector<std::pair<std::string, float>> pieces = {
      {"▁", -2}, {"a", -3}, {"b", -4}, {"c", -6}, {"ab", -10}, {"bc", -5}, {"abc", -7},
      {"▁abc", -1}};
  for (const auto& [piece, score] : pieces) {
    tokens.push_back(piece);
    types.push_back(1);
    scores.push_back(score);
  }
  Writer w;
  w.kv("general.architecture", str("llama"))
      .kv("tokenizer.ggml.model", str("llama"))
      .kv("tokenizer.ggml.tokens", strings(tokens))
      .kv("tokenizer.ggml.scores", float_array(scores))
      .kv("tokenizer.ggml.token_type", int_array(types))
      .kv("tokenizer.ggml.bos_token_id", u32(1))
      .kv("tokenizer.ggml.eos_token_id", u32(2))
      .kv("tokenizer.ggml.unknown_token_id", u32(0));
  return w;
}

// A byte-level ("gpt2") vocabulary: the byte symbols (id = byte value), 256 "12", 257 "123",
// 258 <|begin_of_text|> (control).
Writer bpe_writer(const std::string& pre) {
  std::vector<std::string> tokens = hf_test::byte_symbols();
  tokens.insert(tokens.end(), {"12", "123", "<|begin_of_text|>"});
  std::vector<int32_t> types(256, 1);
  types.insert(types.end(), {1, 1, 3});
  Writer w;
  w.kv("general.architecture", str("llama"))
      .kv("tokenizer.ggml.model", str("gpt2"))
      .kv("tokenizer.ggml.pre", str(pre))
      .kv("tokenizer.ggml.tokens", strings(tokens))
      .kv("tokenizer.ggml.token_type", int_array(types))
      .kv("tokenizer.ggml.merges", strings({"1 2", "12 3"}))
      .kv("tokenizer.ggml.bos_token_id", u32(258))
      .kv("tokenizer.ggml.add_bos_token", boolean(true));
  return w;
}

}  // namespace

TEST_CASE("SentencePiece merges from scores: highest-scoring merged token first", "[gguf-tok]") {
  // Tokens 0 "<unk>", 1 "a", 2 "b", 3 "c", 4 "ab" (-10), 5 "bc" (-5), 6 "abc" (-7).
  // Splits into two tokens: ab = a+b; bc = b+c; abc = a+bc and ab+c (by left id: a=1 < ab=4).
  // By score, highest first: bc (-5), abc (-7) twice, ab (-10).
  const std::vector<std::string> tokens = {"<unk>", "a", "b", "c", "ab", "bc", "abc"};
  const std::vector<double> scores = {0, -1, -2, -3, -10, -5, -7};
  CHECK(merges_from_scores(tokens, scores) ==
        std::vector<std::string>{"b c", "a bc", "ab c", "a b"});
  // Multi-byte characters split only between characters: "é" has no split, "éa" = é + a.
  CHECK(merges_from_scores({"é", "a", "éa"}, {0, 0, -1}) == std::vector<std::string>{"é a"});
}

TEST_CASE("GGUF \"llama\" tokenizer: SentencePiece BPE by score, byte fallback, BOS", "[gguf-tok]") {
  const TokenizerConfig c = tokenizer_from_gguf(parsed(spm_writer()));
  CHECK(c.kind == TokenizerKind::SentencePieceBpe);
  CHECK(c.byte_fallback);
  CHECK(c.space_prefix == SpacePrefix::Prepend);  // add_space_prefix absent: llama.cpp's default
  CHECK(c.unk == "<unk>");
  CHECK(c.bos == "<s>");  // add_bos_token absent: on for "llama" vocabularies
  CHECK(c.eos.empty());
  CHECK(c.added_tokens == std::vector<AddedToken>{AddedToken{"<s>"}, AddedToken{"</s>"}});
  // Merges by score: ▁abc = ▁+abc (-1); bc (-5); abc = a+bc, ab+c (-7); ab (-10).
  CHECK(c.merges == std::vector<std::string>{"▁ abc", "b c", "a bc", "ab c", "a b"});
  const HfBpeTokenizer tok(c);
  // "abc cab€" | </s> | "c", each text piece with its "▁" in front (llama.cpp adds one after
  // every special token): "▁abc▁cab€" and "▁c".
  //   SentencePiece on ▁ a b c ▁ c a b €: the best pair by the merged token's score is bc (-5)
  //   (ab scores -10); then a+bc = abc (-7); then ▁+abc = ▁abc (-1); then the second ab (-10).
  //   "€" is no token: its bytes E2 82 AC are <0xE2> <0x82> <0xAC> = 3 + byte.
  //   = 266 259 262 263 229 133 175;  </s> = 2;  ▁ c = 259 262.  BOS <s> = 1 first.
  CHECK(ids_of(tok.encode("abc cab€</s>c")) ==
        std::vector<int32_t>{1, 266, 259, 262, 263, 229, 133, 175, 2, 259, 262});

  Writer no_prefix = spm_writer();
  no_prefix.kv("tokenizer.ggml.add_space_prefix", boolean(false))
      .kv("tokenizer.ggml.add_bos_token", boolean(false))
      .kv("tokenizer.ggml.add_eos_token", boolean(true));
  const TokenizerConfig d = tokenizer_from_gguf(parsed(no_prefix));
  CHECK(d.space_prefix == SpacePrefix::None);
  CHECK(d.bos.empty());
  CHECK(d.eos == "</s>");
  // "abc": a b c -> bc -> abc = 265, no "▁"; EOS </s> = 2 last.
  CHECK(ids_of(HfBpeTokenizer(d).encode("abc")) == std::vector<int32_t>{265, 2});
}

TEST_CASE("GGUF \"gpt2\" tokenizer: merges, tokenizer.ggml.pre names the regex", "[gguf-tok]") {
  const TokenizerConfig c = tokenizer_from_gguf(parsed(bpe_writer("llama-bpe")));
  CHECK(c.kind == TokenizerKind::ByteLevelBpe);
  CHECK(c.split_regex == SplitRegex::LlamaCppLlama3);
  CHECK(c.ignore_merges);
  CHECK(c.bos == "<|begin_of_text|>");
  // Llama 3's regex: "123" "45"; 1 2 -> 12, 12 3 -> 123 = 257; "4" "5" = 52 53.
  CHECK(ids_of(HfBpeTokenizer(c).encode("12345")) == std::vector<int32_t>{258, 257, 52, 53});
  // Qwen2's: one digit a piece, so no merge applies: 49 50 51 52 53.
  const TokenizerConfig q = tokenizer_from_gguf(parsed(bpe_writer("qwen2")));
  CHECK(q.split_regex == SplitRegex::LlamaCppQwen2);
  CHECK(q.nfc);
  CHECK(ids_of(HfBpeTokenizer(q).encode("12345")) == std::vector<int32_t>{258, 49, 50, 51, 52, 53});
  // GPT-2's: " ?\p{N}+" keeps "12345" whole: 1 2 -> 12 -> 123, then 4, 5.
  const TokenizerConfig g = tokenizer_from_gguf(parsed(bpe_writer("gpt-2")));
  CHECK(ids_of(HfBpeTokenizer(g).encode("12345")) == std::vector<int32_t>{258, 257, 52, 53});
}

TEST_CASE("GGUF tokenizer metadata it cannot use is refused by name", "[gguf-tok]") {
  CHECK_THROWS_WITH(tokenizer_from_gguf(parsed(bpe_writer("kimi-k2"))),
                    Catch::Contains("test.gguf") &&
                        Catch::Contains("tokenizer.ggml.pre \"kimi-k2\" is not a pre-tokenizer"));
  Writer bert = spm_writer();
  bert.kvs[1].second = str("bert");
  CHECK_THROWS_WITH(tokenizer_from_gguf(parsed(bert)),
                    Catch::Contains("tokenizer.ggml.model \"bert\" is not supported"));
  Writer short_types = spm_writer();
  short_types.kvs[4].second = int_array({1, 1});
  CHECK_THROWS_WITH(tokenizer_from_gguf(parsed(short_types)),
                    Catch::Contains("tokenizer.ggml.token_type has 2 entries"));
  Writer bad_bos = spm_writer();
  bad_bos.kvs[5].second = u32(9999);
  CHECK_THROWS_WITH(tokenizer_from_gguf(parsed(bad_bos)),
                    Catch::Contains("tokenizer.ggml.bos_token_id 9999 is outside"));
  Writer none;
  none.kv("general.architecture", str("llama"));
  CHECK_THROWS_WITH(tokenizer_from_gguf(parsed(none)),
                    Catch::Contains("no tokenizer.ggml.model"));
}
