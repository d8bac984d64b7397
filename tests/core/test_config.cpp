// config.json parsing: defaults, every enum value, round trip, and every error message.
// Oracles are hand-written JSON texts and the values in core/config/config.h written out by hand;
// round-trip checks compare against a config filled field by field in the test.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/config_json.h"
#include "core/tensor/error.h"
#include "tests/core/config_error.h"

using atlas::test::parse;

using atlas::AtlasError;
using atlas::ModelConfig;
using atlas::parse_config;
using Catch::Contains;
using Catch::StartsWith;

namespace {

// Field-by-field comparison; CHECKs (not REQUIREs) so one run shows every differing field.
void check_same(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.architecture == b.architecture);
  CHECK(a.tokenizer.kind == b.tokenizer.kind);
  CHECK(a.tokenizer.vocab == b.tokenizer.vocab);
  CHECK(a.tokenizer.unk == b.tokenizer.unk);
  CHECK(a.tokenizer.lowercase == b.tokenizer.lowercase);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.d_model == b.d_model);
  CHECK(a.n_heads == b.n_heads);
  CHECK(a.d_ff == b.d_ff);
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.n_decoder_layers == b.n_decoder_layers);
  CHECK(a.max_positions == b.max_positions);
  CHECK(a.positional == b.positional);
  CHECK(a.sinusoid_layout == b.sinusoid_layout);
  CHECK(a.scale_embedding == b.scale_embedding);
  CHECK(a.norm == b.norm);
  CHECK(a.norm_position == b.norm_position);
  CHECK(a.norm_eps == b.norm_eps);  // exact: the round trip must not drift
  CHECK(a.fixnorm == b.fixnorm);
  CHECK(a.activation == b.activation);
  CHECK(a.attention_bias == b.attention_bias);
  CHECK(a.ffn_bias == b.ffn_bias);
  CHECK(a.output == b.output);
  CHECK(a.pad_id == b.pad_id);
  CHECK(a.bos_id == b.bos_id);
  CHECK(a.seed == b.seed);
  CHECK(a.init_std == b.init_std);
}

// The message of the AtlasError that parsing `json` throws; fails the test if none is thrown.
std::string parse_error_of(const std::string& json, const std::string& origin = "test.json") {
  try {
    parse_config(json, origin);
  } catch (const AtlasError& e) {
    return e.what();
  }
  FAIL("no AtlasError for: " << json);
  return {};
}

std::string validate_error(const ModelConfig& c) {
  try {
    atlas::validate_config(c, "cfg");
  } catch (const AtlasError& e) {
    return e.what();
  }
  FAIL("validate_config accepted the config");
  return {};
}

}  // namespace

TEST_CASE("an empty object gives the documented defaults", "[config]") {
  ModelConfig c = parse("{}");
  CHECK(c.name.empty());
  CHECK(c.description.empty());
  CHECK(c.architecture == atlas::Architecture::Encoder);
  CHECK(c.tokenizer.kind == atlas::TokenizerKind::Bytes);
  CHECK(c.tokenizer.vocab.empty());
  CHECK(c.tokenizer.unk == "<unk>");
  CHECK_FALSE(c.tokenizer.lowercase);
  CHECK(c.vocab_size == 256);
  CHECK(c.d_model == 64);
  CHECK(c.n_heads == 4);
  CHECK(c.d_ff == 256);
  CHECK(c.n_layers == 2);
  CHECK(c.n_decoder_layers == 0);
  CHECK(c.max_positions == 512);
  CHECK(c.positional == atlas::Positional::Sinusoidal);
  CHECK(c.sinusoid_layout == atlas::SinusoidLayout::Interleaved);
  CHECK(c.scale_embedding);
  CHECK(c.norm == atlas::NormKind::LayerNorm);
  CHECK(c.norm_position == atlas::NormPosition::Post);
  CHECK(c.norm_eps == 1e-5f);
  CHECK_FALSE(c.fixnorm);
  CHECK(c.activation == atlas::FfnActivation::ReLU);
  CHECK(c.attention_bias);
  CHECK(c.ffn_bias);
  CHECK(c.output == atlas::OutputHead::Tied);
  CHECK(c.pad_id == -1);
  CHECK(c.bos_id == -1);
  CHECK(c.seed == 0u);
  CHECK(c.init_std == 0.02f);
  // Whitespace around the object is JSON, not an error.
  CHECK(parse(" \n\t{ }\n").d_model == 64);
}

TEST_CASE("a full config reads every key", "[config]") {
  ModelConfig c = parse(R"({
    "name": "t", "description": "d \u00e9", "architecture": "decoder",
    "tokenizer": {"type": "words", "vocab": ["<unk>", "the", "cat"], "unk": "<unk>", "lowercase": true},
    "vocab_size": 3, "d_model": 96, "n_heads": 6, "d_ff": 100, "n_layers": 5,
    "n_decoder_layers": 0, "max_positions": 77, "positional": "learned",
    "sinusoid_layout": "concatenated", "scale_embedding": false, "norm": "scalenorm",
    "norm_position": "pre", "norm_eps": 0.001, "fixnorm": true, "activation": "gelu_tanh",
    "attention_bias": false, "ffn_bias": false, "output": "untied", "pad_id": 0, "bos_id": 2,
    "seed": 18446744073709551615, "init_std": 0.5
  })");
  CHECK(c.name == "t");
  CHECK(c.description == "d \xC3\xA9");
  CHECK(c.architecture == atlas::Architecture::Decoder);
  CHECK(c.tokenizer.kind == atlas::TokenizerKind::Words);
  CHECK(c.tokenizer.vocab == std::vector<std::string>{"<unk>", "the", "cat"});
  CHECK(c.tokenizer.lowercase);
  CHECK(c.vocab_size == 3);
  CHECK(c.d_model == 96);
  CHECK(c.n_heads == 6);
  CHECK(c.d_ff == 100);
  CHECK(c.n_layers == 5);
  CHECK(c.max_positions == 77);
  CHECK(c.positional == atlas::Positional::Learned);
  CHECK(c.sinusoid_layout == atlas::SinusoidLayout::Concatenated);
  CHECK_FALSE(c.scale_embedding);
  CHECK(c.norm == atlas::NormKind::ScaleNorm);
  CHECK(c.norm_position == atlas::NormPosition::Pre);
  CHECK(c.norm_eps == 0.001f);
  CHECK(c.fixnorm);
  CHECK(c.activation == atlas::FfnActivation::GeluTanh);
  CHECK_FALSE(c.attention_bias);
  CHECK_FALSE(c.ffn_bias);
  CHECK(c.output == atlas::OutputHead::Untied);
  CHECK(c.pad_id == 0);
  CHECK(c.bos_id == 2);
  CHECK(c.seed == 18446744073709551615ull);
  CHECK(c.init_std == 0.5f);
}

TEST_CASE("every enum value is accepted", "[config]") {
  using namespace atlas;
  SECTION("architecture") {
    CHECK(parse(R"({"architecture": "encoder"})").architecture == Architecture::Encoder);
    CHECK(parse(R"({"architecture": "decoder"})").architecture == Architecture::Decoder);
    ModelConfig c = parse(R"({"architecture": "encoder-decoder", "n_decoder_layers": 3})");
    CHECK(c.architecture == Architecture::EncoderDecoder);
    CHECK(c.n_decoder_layers == 3);
    CHECK(c.decoder_layers() == 3);
  }
  SECTION("positional and layout") {
    CHECK(parse(R"({"positional": "none"})").positional == Positional::None);
    CHECK(parse(R"({"positional": "sinusoidal"})").positional == Positional::Sinusoidal);
    CHECK(parse(R"({"positional": "learned"})").positional == Positional::Learned);
    CHECK(parse(R"({"positional": "rotary"})").positional == Positional::Rotary);
    CHECK(parse(R"({"sinusoid_layout": "interleaved"})").sinusoid_layout ==
          SinusoidLayout::Interleaved);
    CHECK(parse(R"({"sinusoid_layout": "concatenated"})").sinusoid_layout ==
          SinusoidLayout::Concatenated);
  }
  SECTION("norms and activations") {
    CHECK(parse(R"({"norm": "layernorm"})").norm == NormKind::LayerNorm);
    CHECK(parse(R"({"norm": "scalenorm"})").norm == NormKind::ScaleNorm);
    CHECK(parse(R"({"norm_position": "post"})").norm_position == NormPosition::Post);
    CHECK(parse(R"({"norm_position": "pre"})").norm_position == NormPosition::Pre);
    CHECK(parse(R"({"activation": "relu"})").activation == FfnActivation::ReLU);
    CHECK(parse(R"({"activation": "gelu"})").activation == FfnActivation::Gelu);
    CHECK(parse(R"({"activation": "gelu_tanh"})").activation == FfnActivation::GeluTanh);
  }
  SECTION("output head") {
    CHECK(parse(R"({"output": "tied"})").output == OutputHead::Tied);
    CHECK(parse(R"({"output": "untied"})").output == OutputHead::Untied);
    CHECK(parse(R"({"output": "none"})").output == OutputHead::None);
  }
  SECTION("tokenizer types") {
    CHECK(parse(R"({"tokenizer": {"type": "bytes"}})").tokenizer.kind == TokenizerKind::Bytes);
    ModelConfig chars =
        parse(R"({"vocab_size": 3, "tokenizer": {"type": "chars", "vocab": ["a", "b", "?"], "unk": "?"}})");
    CHECK(chars.tokenizer.kind == TokenizerKind::Chars);
    CHECK(chars.tokenizer.vocab == std::vector<std::string>{"a", "b", "?"});
    CHECK(chars.tokenizer.unk == "?");
    ModelConfig words = parse(R"({"vocab_size": 2, "tokenizer": {"type": "words", "vocab": ["<unk>", "x"]}})");
    CHECK(words.tokenizer.kind == TokenizerKind::Words);
  }
}

TEST_CASE("a chars vocab may be one string split into UTF-8 code points", "[config]") {
  // a (1 byte), e-acute (2), euro sign (3), U+1F600 (4, written as a surrogate pair escape).
  ModelConfig c = parse(
      R"({"vocab_size": 5, "tokenizer": {"type": "chars", "vocab": "a\u00e9\u20ac\ud83d\ude00?", "unk": "?"}})");
  REQUIRE(c.tokenizer.vocab.size() == 5);
  CHECK(c.tokenizer.vocab[0] == "a");
  CHECK(c.tokenizer.vocab[1] == "\xC3\xA9");
  CHECK(c.tokenizer.vocab[2] == "\xE2\x82\xAC");
  CHECK(c.tokenizer.vocab[3] == "\xF0\x9F\x98\x80");
  CHECK(c.tokenizer.vocab[4] == "?");
  CHECK_THAT(parse_error_of(R"({"vocab_size": 2, "tokenizer": {"type": "words", "vocab": "ab"}})"),
             Contains("single string only for type \"chars\""));
}

TEST_CASE("integers must be integral and in range", "[config]") {
  CHECK(parse(R"({"d_model": 512.0, "d_ff": 1e3})").d_model == 512);
  CHECK(parse(R"({"d_ff": 1e3})").d_ff == 1000);
  CHECK(parse(R"({"pad_id": -1.0})").pad_id == -1);
  CHECK(parse(R"({"seed": 4.0})").seed == 4u);
  CHECK_THAT(parse_error_of(R"({"d_model": 512.5})"),
             StartsWith("test.json: ") && Contains("d_model must be an integer, got 512.5"));
  CHECK_THAT(parse_error_of(R"({"n_layers": 9223372036854775808})"),
             Contains("n_layers is out of range"));
  CHECK_THAT(parse_error_of(R"({"n_layers": 1e19})"), Contains("n_layers is out of range"));
  CHECK_THAT(parse_error_of(R"({"seed": -1})"),
             Contains("seed must be a non-negative integer, got -1"));
  CHECK_THAT(parse_error_of(R"({"seed": 0.5})"), Contains("seed must be a non-negative integer"));
  CHECK_THAT(parse_error_of(R"({"seed": 1e20})"), Contains("seed is out of range"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": 1e300})"),
             Contains("norm_eps is out of range for a 32-bit float"));
  // A number where a number is expected may be written as an integer.
  CHECK(parse(R"({"init_std": 1})").init_std == 1.0f);
}

TEST_CASE("config_to_json writes every key and round-trips", "[config]") {
  ModelConfig c;
  c.name = "round \"trip\"\n";
  c.description = "\xE2\x82\xAC and a tab\t";
  c.architecture = atlas::Architecture::EncoderDecoder;
  c.tokenizer.kind = atlas::TokenizerKind::Words;
  c.tokenizer.vocab = {"<unk>", "<pad>", "<s>", "hello", "w\xC3\xB6rld"};
  c.tokenizer.unk = "<unk>";
  c.tokenizer.lowercase = true;
  c.vocab_size = 5;
  c.d_model = 48;
  c.n_heads = 3;
  c.d_ff = 7;
  c.n_layers = 3;
  c.n_decoder_layers = 2;
  c.max_positions = 33;
  c.positional = atlas::Positional::Learned;
  c.sinusoid_layout = atlas::SinusoidLayout::Concatenated;
  c.scale_embedding = false;
  c.norm = atlas::NormKind::ScaleNorm;
  c.norm_position = atlas::NormPosition::Pre;
  c.norm_eps = 1.2345678e-7f;  // not a short decimal: the float must survive exactly
  c.fixnorm = true;
  c.activation = atlas::FfnActivation::Gelu;
  c.attention_bias = false;
  c.ffn_bias = false;
  c.output = atlas::OutputHead::None;
  c.pad_id = 1;
  c.bos_id = 2;
  c.seed = 18446744073709551615ull;
  c.init_std = 0.1f;

  std::string text = atlas::config_to_json(c);
  check_same(parse(text), c);

  // Every key is written, with the tokenizer's four keys nested (independent JSON reader).
  auto j = nlohmann::json::parse(text);
  const std::vector<std::string> keys = {
      "name", "description", "architecture", "tokenizer", "vocab_size", "d_model", "n_heads",
      "d_ff", "n_layers", "n_decoder_layers", "max_positions", "positional", "sinusoid_layout",
      "scale_embedding", "norm", "norm_position", "norm_eps", "fixnorm", "activation",
      "attention_bias", "ffn_bias", "output", "pad_id", "bos_id", "seed", "init_std"};
  // Plus one nested object per variant section (config_json.h), always written.
  CHECK(j.size() == keys.size() + atlas::config_json::config_sections().size());
  for (const auto& section : atlas::config_json::config_sections()) CHECK(j[section.key].is_object());
  for (const auto& k : keys) CHECK(j.contains(k));
  CHECK(j["tokenizer"].size() == 4);
  CHECK(j["architecture"] == "encoder-decoder");
  CHECK(j["tokenizer"]["type"] == "words");
  CHECK(j["seed"].get<uint64_t>() == 18446744073709551615ull);
  // Pretty with a 2-space indent.
  CHECK_THAT(text, StartsWith("{\n  \"name\": "));
  CHECK_THAT(text, Contains("\n    \"type\": \"words\""));

  SECTION("defaults round-trip too, and short floats stay short") {
    std::string d = atlas::config_to_json(ModelConfig{});
    check_same(parse(d), ModelConfig{});
    CHECK_THAT(d, Contains("\"norm_eps\": 1e-05"));
    CHECK_THAT(d, Contains("\"init_std\": 0.02"));
  }
}

TEST_CASE("a config must be a JSON object", "[config][errors]") {
  CHECK(parse_error_of("[]", "preset:tiny") ==
        "preset:tiny: config must be a JSON object, got array");
  CHECK_THAT(parse_error_of("\"x\""), Contains("config must be a JSON object, got string"));
  CHECK_THAT(parse_error_of("3"), Contains("config must be a JSON object, got number"));
  CHECK_THAT(parse_error_of("null"), Contains("got null"));
}

TEST_CASE("malformed JSON names the origin and the byte", "[config][errors]") {
  // Byte 16 is the '}' after the trailing comma (counting from 1).
  std::string e = parse_error_of(R"({"d_model": 64,})", "config.json");
  CHECK_THAT(e, StartsWith("config.json: malformed JSON at byte 16 (line 1, column 16): "));
  CHECK_THAT(e, Contains("syntax error"));
  CHECK_THAT(parse_error_of("", "config.json"), StartsWith("config.json: malformed JSON at byte "));
  CHECK_THAT(parse_error_of("{} {}"), Contains("malformed JSON at byte"));
  CHECK_THAT(parse_error_of("{\n\"a\": tru}"), Contains("(line 2, column"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": 1e400})"),
             Contains("malformed JSON at byte") && Contains("1e400"));
  // Invalid UTF-8 inside a string is malformed JSON; the message itself stays valid UTF-8.
  std::string bad = parse_error_of("{\"name\": \"\xFF\"}");
  CHECK_THAT(bad, Contains("malformed JSON at byte"));
  CHECK(bad.find('\xFF') == std::string::npos);
  CHECK_THAT(bad, Contains("\\xFF"));
}

TEST_CASE("duplicate keys and absurd nesting are rejected", "[config][errors]") {
  CHECK_THAT(parse_error_of(R"({"d_model": 64, "d_model": 128})"),
             StartsWith("test.json: ") && Contains("duplicate key \"d_model\""));
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"unk": "a", "unk": "b"}})"),
             Contains("duplicate key \"unk\" in \"tokenizer\""));
  std::string deep = "{\"name\": " + std::string(100, '[') + std::string(100, ']') + "}";
  CHECK_THAT(parse_error_of(deep), Contains("nesting deeper than 64 levels"));
}

TEST_CASE("unknown keys suggest the nearest known key", "[config][errors]") {
  CHECK(parse_error_of(R"({"n_head": 8})", "preset:tiny") ==
        "preset:tiny: unknown config key \"n_head\"; did you mean \"n_heads\"?");
  CHECK_THAT(parse_error_of(R"({"dmodel": 8})"), Contains("did you mean \"d_model\"?"));
  CHECK_THAT(parse_error_of(R"({"sinusoid_lyout": "x"})"),
             Contains("did you mean \"sinusoid_layout\"?"));
  // Nothing close: list the known keys instead of a misleading guess.
  std::string far = parse_error_of(R"({"colour": 1})");
  CHECK_THAT(far, Contains("unknown config key \"colour\"; known keys: \"name\", \"description\""));
  CHECK_THAT(far, !Contains("did you mean"));
  SECTION("inside the tokenizer") {
    CHECK(parse_error_of(R"({"tokenizer": {"vocb": []}})") ==
          "test.json: unknown tokenizer key \"vocb\"; did you mean \"vocab\"?");
    CHECK_THAT(parse_error_of(R"({"tokenizer": {"kind": "bytes"}})"),
               Contains("unknown tokenizer key \"kind\"; known keys: \"type\", \"vocab\", \"unk\", \"lowercase\""));
  }
  SECTION("before any value check") {
    // d_model is both the wrong type and not divisible; the typo is still what is reported.
    CHECK_THAT(parse_error_of(R"({"d_model": "x", "archtecture": "decoder"})"),
               Contains("unknown config key \"archtecture\"; did you mean \"architecture\"?"));
    CHECK_THAT(parse_error_of(R"({"d_model": 7, "tokenizer": {"type": "nope", "lowercas": true}})"),
               Contains("unknown tokenizer key \"lowercas\""));
  }
  SECTION("control characters in a key are escaped") {
    CHECK_THAT(parse_error_of("{\"a\\u0001\": 1}"), Contains("\"a\\u0001\""));
  }
}

TEST_CASE("wrong types name the key and the expected type", "[config][errors]") {
  CHECK(parse_error_of(R"({"d_model": "512"})") ==
        "test.json: d_model must be an integer, got string");
  CHECK_THAT(parse_error_of(R"({"n_heads": true})"),
             Contains("n_heads must be an integer, got boolean"));
  CHECK_THAT(parse_error_of(R"({"name": 3})"), Contains("name must be a string, got 3"));
  CHECK_THAT(parse_error_of(R"({"fixnorm": 1})"), Contains("fixnorm must be true or false, got 1"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": "small"})"),
             Contains("norm_eps must be a number, got string"));
  CHECK_THAT(parse_error_of(R"({"seed": null})"),
             Contains("seed must be a non-negative integer, got null"));
  CHECK_THAT(parse_error_of(R"({"tokenizer": "bytes"})"),
             Contains("tokenizer must be an object, got string"));
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"vocab": {}}})"),
             Contains("tokenizer.vocab must be an array of strings, got object"));
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"type": "words", "vocab": ["a", 2]}})"),
             Contains("tokenizer.vocab[1] must be a string, got 2"));
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"lowercase": "yes"}})"),
             Contains("tokenizer.lowercase must be true or false, got string"));
  CHECK_THAT(parse_error_of(R"({"architecture": 1})"),
             Contains("architecture must be a string, one of"));
}

TEST_CASE("bad enum values list the allowed ones", "[config][errors]") {
  CHECK(parse_error_of(R"({"architecture": "encdec"})") ==
        "test.json: architecture must be one of \"encoder\", \"decoder\", \"encoder-decoder\"; "
        "got \"encdec\"");
  CHECK_THAT(parse_error_of(R"({"positional": "alibi"})"),
             Contains("\"none\", \"sinusoidal\", \"learned\", \"rotary\"; got \"alibi\""));
  CHECK_THAT(parse_error_of(R"({"sinusoid_layout": "x"})"),
             Contains("\"interleaved\", \"concatenated\""));
  CHECK_THAT(parse_error_of(R"({"norm": "batchnorm"})"),
             Contains("\"layernorm\", \"scalenorm\", \"rmsnorm\""));
  CHECK_THAT(parse_error_of(R"({"norm_position": "middle"})"), Contains("\"post\", \"pre\""));
  CHECK_THAT(parse_error_of(R"({"activation": "swish"})"),
             Contains("\"relu\", \"gelu\", \"gelu_tanh\""));
  CHECK_THAT(parse_error_of(R"({"output": "shared"})"), Contains("\"tied\", \"untied\", \"none\""));
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"type": "bpe"}})"),
             Contains("tokenizer.type must be one of \"bytes\", \"chars\", \"words\", "
                      "\"gpt2_bpe\", \"wordpiece\", \"labels\", \"byte_level_bpe\", "
                      "\"sentencepiece_bpe\"; got \"bpe\""));
  // Enum names are case-sensitive, as written in docs/model-format.md.
  CHECK_THAT(parse_error_of(R"({"norm": "LayerNorm"})"), Contains("got \"LayerNorm\""));
}

TEST_CASE("validation rejects inconsistent sizes", "[config][errors]") {
  CHECK(parse_error_of(R"({"d_model": 100, "n_heads": 8})") ==
        "test.json: d_model 100 is not divisible by n_heads 8 (give attention.head_dim for heads of another width)");
  CHECK_THAT(parse_error_of(R"({"d_model": 0})"), Contains("d_model must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"d_model": -64})"), Contains("d_model must be >= 1, got -64"));
  CHECK_THAT(parse_error_of(R"({"n_heads": 0})"), Contains("n_heads must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"d_ff": 0})"), Contains("d_ff must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"n_layers": 0})"), Contains("n_layers must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"vocab_size": 0})"), Contains("vocab_size must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"max_positions": 0})"),
             Contains("max_positions must be >= 1, got 0"));
  CHECK_THAT(parse_error_of(R"({"architecture": "encoder-decoder"})"),
             Contains("n_decoder_layers must be >= 1 for an \"encoder-decoder\" model, got 0"));
  CHECK_THAT(parse_error_of(R"({"architecture": "decoder", "n_decoder_layers": 2})"),
             Contains("n_decoder_layers must be 0 unless architecture is \"encoder-decoder\""));
  CHECK_THAT(parse_error_of(R"({"n_decoder_layers": 1})"), Contains("n_decoder_layers must be 0"));
  CHECK_NOTHROW(parse(R"({"d_model": 6, "n_heads": 2, "positional": "sinusoidal"})"));
  CHECK_THAT(parse_error_of(R"({"d_model": 9, "n_heads": 3})"),
             Contains("sinusoidal positional encoding needs an even d_model, got 9"));
  CHECK_NOTHROW(parse(R"({"d_model": 9, "n_heads": 3, "positional": "learned"})"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": 0})"),
             Contains("norm_eps must be a positive finite number, got 0"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": -1e-6})"),
             Contains("norm_eps must be a positive finite number, got -1e-06"));
  CHECK_THAT(parse_error_of(R"({"norm_eps": 1e-60})"),
             Contains("norm_eps must be a positive"));  // underflows to 0
  CHECK_THAT(parse_error_of(R"({"init_std": -0.1})"),
             Contains("init_std must be a finite number >= 0, got -0.1"));
  CHECK_NOTHROW(parse(R"({"init_std": 0})"));
}

TEST_CASE("pad_id and bos_id must be -1 or a token id", "[config][errors]") {
  CHECK_NOTHROW(parse(R"({"pad_id": 255, "bos_id": 0})"));
  CHECK_THAT(parse_error_of(R"({"pad_id": 256})"),
             Contains("pad_id 256 is out of range for vocab_size 256 (valid: -1 for none, or 0..255)"));
  CHECK_THAT(parse_error_of(R"({"bos_id": -2})"), Contains("bos_id -2 is out of range"));
}

TEST_CASE("absurd sizes are refused with a clear message", "[config][errors]") {
  CHECK_THAT(parse_error_of(R"({"d_model": 131072, "n_heads": 4})"),
             Contains("d_model 131072 is larger than this tool supports (at most 65536)"));
  CHECK_THAT(parse_error_of(R"({"d_ff": 65537})"),
             Contains("d_ff 65537 is larger than this tool supports"));
  CHECK_THAT(parse_error_of(R"({"d_model": 4096, "n_heads": 2048})"),
             Contains("n_heads 2048 is larger"));
  CHECK_THAT(parse_error_of(R"({"n_layers": 1025})"), Contains("n_layers 1025 is larger"));
  CHECK_THAT(parse_error_of(R"({"architecture": "encoder-decoder", "n_decoder_layers": 1025})"),
             Contains("n_decoder_layers 1025 is larger"));
  CHECK_THAT(parse_error_of(R"({"vocab_size": 10000001})"),
             Contains("vocab_size 10000001 is larger"));
  CHECK_THAT(parse_error_of(R"({"max_positions": 1048577})"),
             Contains("max_positions 1048577 is larger"));
  CHECK_NOTHROW(parse(R"({"max_positions": 1048576, "vocab_size": 10000000})"));

  // Hand count: one layer = 4*4096^2 + 2*4096*16384 = 201,326,592; embeddings 256*4096.
  // 100 layers: 20,132,659,200 + 1,048,576 > 20e9; 99 layers: 19,932,381,184 < 20e9.
  CHECK_THAT(parse_error_of(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 100})"),
             Contains("config asks for ~20.1 billion parameters, more than this tool supports"));
  CHECK_NOTHROW(parse(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 99})"));
  // Embedding-sized terms tip 99 layers over: 10,000 x 4096 = 40,960,000 each.
  // Tied: 19,932,381,184 - 1,048,576 + 40,960,000 = 19,972,292,608 (fits).
  CHECK_NOTHROW(parse(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 99, "vocab_size": 10000})"));
  // Untied output adds another 40,960,000: 20,013,252,608.
  CHECK_THAT(parse_error_of(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 99, "vocab_size": 10000,
                          "output": "untied"})"),
             Contains("~20.0 billion parameters"));
  // 20,000 learned positions: 19,932,381,184 + 81,920,000 = 20,014,301,184.
  CHECK_THAT(parse_error_of(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 99,
                          "positional": "learned", "max_positions": 20000})"),
             Contains("~20.0 billion parameters"));
  // Encoder-decoder: 50 encoder layers (50 x 201,326,592) + 49 decoder layers with
  // cross-attention (49 x (201,326,592 + 4 x 4096^2 = 268,435,456)) + 1,048,576 embeddings
  // = 10,066,329,600 + 13,153,337,344 + 1,048,576 = 23,220,715,520.
  CHECK_THAT(parse_error_of(R"({"d_model": 4096, "d_ff": 16384, "n_layers": 50,
                          "architecture": "encoder-decoder", "n_decoder_layers": 49})"),
             Contains("~23.2 billion parameters"));
  // Every size at its own limit still adds up to far too much.
  CHECK_THAT(
      parse_error_of(R"({"d_model": 65536, "d_ff": 65536, "n_layers": 1024, "vocab_size": 10000000,
                          "n_heads": 1024})"),
      Contains("parameters, more than this tool supports"));
}

TEST_CASE("the tokenizer must agree with vocab_size", "[config][errors]") {
  CHECK_THAT(parse_error_of(R"({"vocab_size": 100})"),
             Contains("a bytes tokenizer needs vocab_size >= 256 (one id per byte value), got 100"));
  CHECK_NOTHROW(parse(R"({"vocab_size": 260})"));  // room for special ids after the bytes
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"vocab": ["a"]}})"),
             Contains("a bytes tokenizer takes no vocab"));
  std::string thirty;
  for (int i = 0; i < 29; ++i) thirty += "\"w" + std::to_string(i) + "\", ";
  thirty += "\"<unk>\"";
  CHECK(parse_error_of(R"({"vocab_size": 32, "tokenizer": {"type": "words", "vocab": [)" + thirty +
                       "]}}") == "test.json: tokenizer has 30 entries but vocab_size is 32");
  CHECK_THAT(parse_error_of(R"({"tokenizer": {"type": "chars"}})"),
             Contains("tokenizer has 0 entries but vocab_size is 256"));
  CHECK_THAT(
      parse_error_of(R"({"vocab_size": 2, "tokenizer": {"type": "words", "vocab": ["a", "b"]}})"),
      Contains("tokenizer.unk \"<unk>\" is not in the words vocab"));
  CHECK_THAT(
      parse_error_of(
          R"({"vocab_size": 3, "tokenizer": {"type": "chars", "vocab": "aba", "unk": "b"}})"),
      Contains("tokenizer.vocab[2] \"a\" appears twice in the chars vocab"));
}

TEST_CASE("validate_config checks structs built in code", "[config][errors]") {
  ModelConfig c;
  CHECK_NOTHROW(atlas::validate_config(c, "cfg"));
  c.norm_eps = std::numeric_limits<float>::quiet_NaN();
  CHECK_THAT(validate_error(c), StartsWith("cfg: norm_eps must be a positive finite number"));
  c = ModelConfig{};
  c.init_std = std::numeric_limits<float>::infinity();
  CHECK_THAT(validate_error(c), Contains("init_std must be a finite number >= 0, got inf"));
  c = ModelConfig{};
  c.tokenizer.kind = atlas::TokenizerKind::Words;
  c.tokenizer.vocab = {"<unk>", "ok", "bad\xC0\xAF"};  // overlong '/'
  c.vocab_size = 3;
  CHECK_THAT(validate_error(c), Contains("tokenizer.vocab[2] is not valid UTF-8"));
  c = ModelConfig{};
  c.d_model = 65536;
  c.n_heads = 1;
  c.n_layers = 1024;
  c.d_ff = 65536;
  c.vocab_size = 10'000'000;
  c.output = atlas::OutputHead::Untied;
  c.positional = atlas::Positional::Learned;
  c.max_positions = 1'048'576;
  CHECK_THAT(validate_error(c), Contains("billion parameters"));
}

TEST_CASE("edit_distance matches hand-computed values", "[config]") {
  CHECK(atlas::edit_distance("kitten", "sitting") == 3);
  CHECK(atlas::edit_distance("", "abc") == 3);
  CHECK(atlas::edit_distance("abc", "") == 3);
  CHECK(atlas::edit_distance("", "") == 0);
  CHECK(atlas::edit_distance("d_model", "d_model") == 0);
  CHECK(atlas::edit_distance("flaw", "lawn") == 2);
  CHECK(atlas::edit_distance("n_head", "n_heads") == 1);
  CHECK(atlas::edit_distance("ab", "ba") == 2);  // plain Levenshtein: no transpositions
}

TEST_CASE("nearest suggests only close candidates", "[config]") {
  const std::vector<std::string> keys = {"d_model", "d_ff", "n_heads"};
  CHECK(atlas::nearest("d_modle", keys) == "d_model");  // distance 2
  CHECK(atlas::nearest("n_head", keys) == "n_heads");
  CHECK(atlas::nearest("zzzzzz", keys).empty());       // distance 6 > max(2, 6/3)
  CHECK(atlas::nearest("d_f", {"d_ff", "d_fg"}) == "d_ff");  // tie: the first candidate
  CHECK(atlas::nearest("anything", {}).empty());
  // Long words allow more edits: 12 characters, limit 4.
  CHECK(atlas::nearest("scal_embeding", {"scale_embedding"}) == "scale_embedding");
}
