// SentencePiece's tokenizer.model (core/formats/hf/sentencepiece_model.h), written byte by byte
// here with a small protobuf writer (varint keys, length-delimited messages, fixed32 floats,
// from the wire format and sentencepiece_model.proto's field numbers), independent of the reader:
// the parsed pieces by value, a Llama folder that ships only tokenizer.model tokenizing as the
// equivalent GGUF "llama" vocabulary does, and malformed files refused by message.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/formats/gguf.h"
#include "core/formats/gguf_tokenizer.h"
#include "core/formats/hf/hf_checkpoint.h"
#include "core/formats/hf/sentencepiece_model.h"
#include "core/tensor/error.h"
#include "core/tokenizers/hf_bpe_tokenizer.h"
#include "tests/core/gguf_test_util.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/token_lists.h"

using namespace atlas;
using atlas::test::ids_of;
using Catch::Matchers::Contains;

namespace {

// ---- a protobuf writer ----------------------------------------------------------------------

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += char(uint8_t(v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += char(uint8_t(v));
  return out;
}
std::string key(uint64_t field, uint32_t wire) { return varint(field << 3 | wire); }
std::string int_field(uint64_t field, int64_t v) { return key(field, 0) + varint(uint64_t(v)); }
std::string bytes_field(uint64_t field, const std::string& b) {
  return key(field, 2) + varint(b.size()) + b;
}
std::string float_field(uint64_t field, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  std::string out = key(field, 5);
  for (int i = 0; i < 4; ++i) out += char(uint8_t(u >> (8 * i)));
  return out;
}

struct Piece {
  std::string text;
  float score;
  int64_t type;
};

// 0 <unk> (unknown), 1 <s>, 2 </s> (control), 3..258 <0x00>..<0xFF> (byte), then normal pieces
// 259 "▁" -2, 260 "h" -3, 261 "e" -3.5, 262 "l" -4, 263 "o" -4.5, 264 "ll" -5, 265 "ell" -6,
// 266 "ello" -7, 267 "▁h" -8, 268 "▁hello" -1.
std::vector<Piece> vocabulary() {
  std::vector<Piece> p = {{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) p.push_back({std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0, 6});
  for (const auto& [text, score] : std::vector<std::pair<std::string, float>>{
           {"▁", -2}, {"h", -3}, {"e", -3.5f}, {"l", -4}, {"o", -4.5f}, {"ll", -5}, {"ell", -6},
           {"ello", -7}, {"▁h", -8}, {"▁hello", -1}})
    p.push_back({text, score, 1});
  return p;
}

// A Llama-2-like ModelProto, with fields the reader skips (trainer_spec.vocab_size,
// model_prefix, character_coverage, a fixed64, normalizer precompiled_charsmap,
// denormalizer_spec) and pad_id -1 as a 10-byte varint.
std::string model_bytes(const std::vector<Piece>& pieces, int64_t model_type = 2,
                        bool add_dummy_prefix = true, const std::string& normalizer = "identity") {
  std::string m;
  for (const Piece& p : pieces) {
    std::string piece = bytes_field(1, p.text) + float_field(2, p.score);
    if (p.type != 1) piece += int_field(3, p.type);
    m += bytes_field(1, piece);
  }
  const std::string trainer = bytes_field(2, "llama") + int_field(3, model_type) +
                              int_field(4, int64_t(pieces.size())) + float_field(10, 0.9995f) +
                              key(99, 1) + std::string(8, '\x07') + int_field(35, 1) +
                              int_field(40, 0) + int_field(41, 1) + int_field(42, 2) +
                              int_field(43, -1);
  m += bytes_field(2, trainer);
  m += bytes_field(3, bytes_field(1, normalizer) + bytes_field(2, "") +
                          int_field(3, add_dummy_prefix) + int_field(4, 0));
  m += bytes_field(5, bytes_field(1, "identity"));
  return m;
}

// The same vocabulary as a GGUF "llama" tokenizer (gguf_test_util.h's writer).
GgufFile gguf_of(const std::vector<Piece>& pieces) {
  using namespace gguf_test;
  std::vector<std::string> tokens;
  std::vector<Value> scores, types;
  for (const Piece& p : pieces) {
    tokens.push_back(p.text);
    scores.push_back(f32(p.score));
    types.push_back(i32(int32_t(p.type)));
  }
  Writer w;
  w.kv("general.architecture", str("llama"))
      .kv("tokenizer.ggml.model", str("llama"))
      .kv("tokenizer.ggml.tokens", strings(tokens))
      .kv("tokenizer.ggml.scores", array(kF32, scores))
      .kv("tokenizer.ggml.token_type", array(kI32, types))
      .kv("tokenizer.ggml.bos_token_id", u32(1))
      .kv("tokenizer.ggml.eos_token_id", u32(2))
      .kv("tokenizer.ggml.unknown_token_id", u32(0));
  return GgufFile::parse(w.build(), "test.gguf");
}

// A one-layer Llama folder (HF names) with config.json, model.safetensors and the given files.
hf_test::fs::path llama_folder(const std::string& name, int64_t vocab) {
  using namespace hf_test;
  const fs::path dir = fresh_dir(name);
  const int64_t d = 8, ff = 8;
  write_text(dir / "config.json",
             nlohmann::json{{"model_type", "llama"}, {"vocab_size", vocab}, {"hidden_size", d},
                            {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                            {"num_key_value_heads", 2}, {"intermediate_size", ff},
                            {"max_position_embeddings", 32}, {"rms_norm_eps", 1e-6},
                            {"rope_theta", 10000.0}, {"tie_word_embeddings", false},
                            {"hidden_act", "silu"}}
                 .dump());
  HfTensors t;
  uint32_t seed = 1;
  for (const auto& [n, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"model.embed_tokens.weight", {vocab, d}},
           {"model.layers.0.input_layernorm.weight", {d}},
           {"model.layers.0.self_attn.q_proj.weight", {d, d}},
           {"model.layers.0.self_attn.k_proj.weight", {d, d}},
           {"model.layers.0.self_attn.v_proj.weight", {d, d}},
           {"model.layers.0.self_attn.o_proj.weight", {d, d}},
           {"model.layers.0.post_attention_layernorm.weight", {d}},
           {"model.layers.0.mlp.gate_proj.weight", {ff, d}},
           {"model.layers.0.mlp.up_proj.weight", {ff, d}},
           {"model.layers.0.mlp.down_proj.weight", {d, ff}},
           {"model.norm.weight", {d}},
           {"lm_head.weight", {vocab, d}}})
    t[n] = pattern(shape, seed++);
  write_safetensors_file(dir / "model.safetensors", t);
  return dir;
}

std::string refusal(const std::string& bytes) {
  try {
    parse_sentencepiece_model(bytes, "tokenizer.model");
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("tokenizer.model: pieces, scores, types and specs read by value", "[sentencepiece]") {
  const std::vector<Piece> want = vocabulary();
  const SentencePieceModel m = parse_sentencepiece_model(model_bytes(want), "tokenizer.model");
  REQUIRE(m.pieces.size() == 269);
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(m.pieces[i] == want[i].text);
    CHECK(m.scores[i] == double(want[i].score));
    CHECK(m.types[i] == want[i].type);
  }
  CHECK(m.pieces[3] == "<0x00>");
  CHECK(m.pieces[3 + 0x41] == "<0x41>");
  CHECK(m.model_type == 2);
  CHECK(m.byte_fallback);
  CHECK(m.unk_id == 0);
  CHECK(m.bos_id == 1);
  CHECK(m.eos_id == 2);
  CHECK(m.pad_id == -1);  // sign-extended int32 on the wire
  CHECK(m.normalizer_name == "identity");
  CHECK(m.add_dummy_prefix);
  CHECK_FALSE(m.remove_extra_whitespaces);
}

TEST_CASE("a Llama folder with only tokenizer.model tokenizes as the GGUF \"llama\" vocabulary",
          "[sentencepiece][hf][tokenizer]") {
  const std::vector<Piece> pieces = vocabulary();
  const auto dir = llama_folder("spm-only", 272);
  hf_test::write_text(dir / "tokenizer.model", model_bytes(pieces));
  const HfCheckpoint hf = read_hf_checkpoint(dir.string());
  const TokenizerConfig& c = hf.config.tokenizer;
  const TokenizerConfig g = tokenizer_from_gguf(gguf_of(pieces));
  CHECK(c.kind == TokenizerKind::SentencePieceBpe);
  CHECK(c.vocab == g.vocab);
  // Merges by the merged piece's score: ▁hello = ▁h + ello (-1), ll (-5), ell = e + ll (-6),
  // ello = ell + o (-7), ▁h (-8).
  CHECK(c.merges == std::vector<std::string>{"▁h ello", "l l", "e ll", "ell o", "▁ h"});
  CHECK(c.merges == g.merges);
  CHECK(c.added_tokens == g.added_tokens);
  CHECK(c.unk == "<unk>");
  CHECK(c.unk == g.unk);
  CHECK(c.bos == "<s>");
  CHECK(c.bos == g.bos);
  CHECK(c.eos == g.eos);
  CHECK(c.byte_fallback == g.byte_fallback);
  CHECK(c.space_prefix == SpacePrefix::Prepend);
  CHECK(c.space_prefix == g.space_prefix);
  // "hello hola" -> ▁ h e l l o ▁ h o l a. Best merges in turn: l l (-5), e ll (-6), ell o (-7),
  // ▁ h (-8, leftmost first, then the second), ▁h ello (-1). "a" is no piece: byte <0x61> =
  // 3 + 0x61 = 100. BOS <s> = 1 first: 1, ▁hello 268, ▁h 267, o 263, l 262, 100.
  const std::vector<int32_t> want = {1, 268, 267, 263, 262, 100};
  CHECK(ids_of(HfBpeTokenizer(c).encode("hello hola")) == want);
  CHECK(ids_of(HfBpeTokenizer(g).encode("hello hola")) == want);
  for (const std::string text : {"hello</s>hello", "  hell o€", "ello"})
    CHECK(ids_of(HfBpeTokenizer(c).encode(text)) == ids_of(HfBpeTokenizer(g).encode(text)));

  // tokenizer_config.json wins, as in transformers; add_dummy_prefix false is no "▁".
  hf_test::write_text(dir / "tokenizer_config.json",
                      R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "</s>"})");
  hf_test::write_text(dir / "tokenizer.model", model_bytes(pieces, 2, false));
  const TokenizerConfig d = read_hf_config(dir.string()).tokenizer;
  CHECK(d.bos.empty());
  CHECK(d.eos == "</s>");
  CHECK(d.space_prefix == SpacePrefix::None);
  // "hello": h e l l o -> ll, ell, ello; no "▁h": h 260, ello 266, then EOS 2.
  CHECK(ids_of(HfBpeTokenizer(d).encode("hello")) == std::vector<int32_t>{260, 266, 2});
}

TEST_CASE("tokenizer.model models the tokenizer cannot run are refused by name", "[sentencepiece][hf]") {
  const std::vector<Piece> pieces = vocabulary();
  const auto dir = llama_folder("spm-refused", 272);
  const auto refused = [&](const std::string& bytes) {
    hf_test::write_text(dir / "tokenizer.model", bytes);
    try {
      read_hf_config(dir.string());
    } catch (const AtlasError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(refused(model_bytes(pieces, 1)),
             Contains("tokenizer.model") && Contains("model_type is UNIGRAM"));
  CHECK_THAT(refused(model_bytes(pieces, 2, true, "nmt_nfkc")),
             Contains("normalizer_spec.name is \"nmt_nfkc\""));
  std::vector<Piece> no_fallback(pieces.begin(), pieces.begin() + 3);
  no_fallback[0].type = 1;  // no unknown piece, no byte pieces
  CHECK_THAT(refused(model_bytes(no_fallback)), Contains("neither byte tokens nor an unknown"));
  // More pieces than config.json's vocab_size rows.
  const auto small = llama_folder("spm-small", 100);
  hf_test::write_text(small / "tokenizer.model", model_bytes(pieces));
  CHECK_THROWS_WITH(read_hf_config(small.string()), Contains("vocab_size is 100"));
}

TEST_CASE("malformed tokenizer.model files are refused with the byte offset", "[sentencepiece][errors]") {
  const std::string good = model_bytes(vocabulary());
  CHECK_THAT(refusal(""), Contains("tokenizer.model: has no pieces"));
  // A truncated varint: a key byte with its continuation bit set, then the end.
  CHECK_THAT(refusal("\x8a"), Contains("byte 1: a varint runs past the end"));
  // A length past the end: pieces (field 1, wire 2) claiming 50 bytes with 3 left.
  CHECK_THAT(refusal(key(1, 2) + varint(50) + "abc"),
             Contains("byte 2: a length of 50 bytes runs past the end of its message (3 bytes left)"));
  // The whole model cut short inside the trainer_spec.
  CHECK_THAT(refusal(good.substr(0, good.size() - 40)), Contains("runs past the end"));
  // pieces as a varint.
  CHECK_THAT(refusal(int_field(1, 5)), Contains("byte 0: ModelProto.pieces has wire type 0, expected 2"));
  // A piece's score as a varint, at its offset inside the file.
  CHECK_THAT(refusal(bytes_field(1, bytes_field(1, "a") + int_field(2, 1))),
             Contains("byte 5: SentencePiece.score has wire type 0, expected 5"));
  CHECK_THAT(refusal(key(7, 3)), Contains("a group (wire type 3)"));
  CHECK_THAT(refusal(key(7, 6)), Contains("unknown wire type 6"));
  CHECK_THAT(refusal(key(0, 0) + varint(1)), Contains("a field numbered 0"));
  CHECK_THAT(refusal(std::string(11, '\xff')), Contains("a varint is longer than"));
  CHECK_THAT(refusal(bytes_field(1, bytes_field(1, std::string(5000, 'x')))),
             Contains("a piece is 5000 bytes long (at most 4096)"));
  // A piece that is not text reaches the vocabulary check, which names it.
  const SentencePieceModel bad = parse_sentencepiece_model(
      bytes_field(1, bytes_field(1, "\xff")) + bytes_field(1, bytes_field(1, "<unk>") + int_field(3, 2)) +
          bytes_field(2, int_field(3, 2)) + bytes_field(3, int_field(4, 0)),
      "tokenizer.model");
  CHECK_THROWS_WITH(tokenizer_from_sentencepiece(bad, "tokenizer.model", true, false),
                    Contains("pieces[0] is empty or not valid UTF-8"));
}
