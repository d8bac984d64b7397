// The attention as one typed choice (core/config/attention_kind.h): which section chooses which
// kind, what a disabled section leaves behind, and the refusal of two kinds. Oracles: hand-written
// config texts and the written form of the empty config.
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "core/config/config.h"
#include "core/model/presets.h"
#include "tests/core/config_error.h"

using namespace atlas;
using Catch::Contains;

namespace {

using test::config_error_of;
using test::decoder_config_with;

}  // namespace

TEST_CASE("each attention section chooses the kind; without one it is plain softmax",
          "[config][attention]") {
  const ModelConfig plain = parse_config("{}", "t");
  REQUIRE(plain.softmax());
  CHECK_FALSE(plain.softmax()->shaw);
  CHECK_FALSE(plain.softmax()->adaptive_span);
  CHECK(plain.score() == nullptr);
  CHECK(plain.score_function().function == ScoreFunction::ScaledDot);

  const ModelConfig both = parse_config(
      decoder_config_with(
          R"("shaw": {"enabled": true, "max_distance": 3}, "adaptive_span": {"enabled": true, "max_span": 9})"),
      "t");
  REQUIRE(both.shaw());
  REQUIRE(both.adaptive_span());  // Shaw and the span act in the same softmax sub-layer
  CHECK(both.shaw()->max_distance == 3);
  CHECK(both.adaptive_span()->max_span == 9);

  const ModelConfig sparse =
      parse_config(decoder_config_with(R"("sparse": {"pattern": "fixed", "block": 16})"), "t");
  REQUIRE(sparse.sparse());
  CHECK(sparse.sparse()->block == 16);
  CHECK(sparse.softmax() == nullptr);
  const ModelConfig lsh =
      parse_config(decoder_config_with(R"("lsh": {"enabled": true, "chunk_length": 8})"), "t");
  REQUIRE(lsh.lsh());
  CHECK(lsh.lsh()->chunk_length == 8);
  CHECK(lsh.reversible() == nullptr);
  const ModelConfig performer =
      parse_config(R"({"performer": {"enabled": true, "features": 12}})", "t");
  REQUIRE(performer.performer());
  CHECK(performer.performer()->features == 12);
  const ModelConfig cosine =
      parse_config(R"({"score": {"function": "cosine", "strength": 4}})", "t");
  REQUIRE(cosine.score());
  CHECK(cosine.score_function().strength == 4.0f);
  // "scaled_dot" is softmax attention, whatever else the section says.
  CHECK(parse_config(R"({"score": {"function": "scaled_dot", "d_attn": 5}})", "t").score() ==
        nullptr);
}

TEST_CASE("a section that does not choose its kind is range-checked, then dropped",
          "[config][attention]") {
  const std::string empty = config_to_json(parse_config("{}", "t"));
  for (const char* off : {R"({"shaw": {"enabled": false, "max_distance": 3}})",
                          R"({"adaptive_span": {"enabled": false, "ramp": 4}})",
                          R"({"sparse": {"pattern": "none", "block": 16}})",
                          R"({"lsh": {"enabled": false, "n_rounds": 2}})",
                          R"({"performer": {"enabled": false, "features": 9}})",
                          R"({"score": {"function": "scaled_dot", "strength": 2}})"}) {
    INFO(off);
    CHECK(config_to_json(parse_config(off, "t")) == empty);
  }
  CHECK_THAT(config_error_of(R"({"shaw": {"enabled": false, "max_distance": -1}})"),
             Contains("shaw.max_distance"));
  CHECK_THAT(config_error_of(R"({"adaptive_span": {"ramp": 0}})"),
             Contains("adaptive_span.ramp must be >= 1 (the soft mask divides by it), got 0"));
  CHECK_THAT(config_error_of(R"({"sparse": {"pattern": "none", "summary": 9, "block": 4}})"),
             Contains("sparse.summary"));
  CHECK_THAT(config_error_of(R"({"lsh": {"n_buckets": 3}})"),
             Contains("lsh.n_buckets must be even"));
  CHECK_THAT(config_error_of(R"({"performer": {"features": 0}})"), Contains("performer.features"));
  CHECK_THAT(config_error_of(R"({"score": {"strength": 0}})"), Contains("score.strength"));
}

TEST_CASE("two attention kinds are refused naming both keys, in any order of the text",
          "[config][attention]") {
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("sparse": {"pattern": "strided"}, "shaw": {"enabled": true})")),
             Contains("shaw.enabled cannot be combined with sparse.pattern") && Contains("t.json"));
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("adaptive_span": {"enabled": true}, "performer": {"enabled": true})")),
             Contains("adaptive_span.enabled cannot be combined with performer.enabled"));
  CHECK_THAT(config_error_of(R"({"score": {"function": "dot"}, "performer": {"enabled": true}})"),
             Contains("score.function cannot be combined with performer.enabled"));
  // Three at once: the first pair read is named (sections are read in the folder-name order of
  // core/variants: performer, reformer's "lsh", sparse).
  CHECK_THAT(
      config_error_of(decoder_config_with(
          R"("performer": {"enabled": true}, "lsh": {"enabled": true, "chunk_length": 8}, "sparse": {"pattern": "fixed"})")),
      Contains("performer.enabled cannot be combined with lsh.enabled"));
  // LSH attention and the reversible stack are two choices of one section, and combine.
  const ModelConfig reformer = parse_config(
      decoder_config_with(R"("lsh": {"enabled": true, "chunk_length": 8, "reversible": true})"),
      "t");
  CHECK(reformer.lsh() != nullptr);
  CHECK(reformer.reversible() != nullptr);
}

TEST_CASE("attention kinds set by code are checked like parsed ones", "[config][attention]") {
  ModelConfig c = parse_config("{}", "t");
  c.attention_kind = SparseConfig{};  // pattern "none": dense attention is softmax attention
  CHECK_THROWS_WITH(validate_config(c, "code"), Contains("sparse.pattern \"none\""));
  c.attention_kind = ScoreConfig{};  // scaled dot
  CHECK_THROWS_WITH(validate_config(c, "code"), Contains("score.function \"scaled_dot\""));
  c.attention_kind = PerformerConfig{.features = 0};
  CHECK_THROWS_WITH(validate_config(c, "code"), Contains("performer.features"));
  c.attention_kind =
      SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{.max_span = 4, .init_z = 5}};
  CHECK_THROWS_WITH(validate_config(c, "code"),
                    Contains("adaptive_span.init_z must be in [0, max_span = 4]"));
  c.attention_kind = LshConfig{.chunk_length = 1000};  // longer than max_positions 512
  CHECK_THROWS_WITH(validate_config(c, "code"), Contains("lsh.chunk_length 1000"));
  c.attention_kind = LshConfig{.chunk_length = 8};
  CHECK_NOTHROW(validate_config(c, "code"));
}

TEST_CASE("the recurrent seq2seq reads the score kind, or scaled dot",
          "[config][attention][seq2seq]") {
  const std::string s2s =
      R"("architecture": "encoder-decoder", "n_decoder_layers": 1, "rnn_seq2seq": {"enabled": true, "bidirectional": false})";
  const ModelConfig general =
      parse_config("{" + s2s + R"(, "score": {"function": "general"}})", "t");
  REQUIRE(general.rnn_seq2seq());
  CHECK(general.score_function().function == ScoreFunction::General);
  const ModelConfig dot = parse_config("{" + s2s + "}", "t");
  CHECK(dot.score() == nullptr);
  CHECK(dot.score_function().function == ScoreFunction::ScaledDot);
}

TEST_CASE("every preset's attention kind writes and reads back to the same kind",
          "[config][attention][presets]") {
  for (const PresetInfo& info : list_presets()) {
    INFO(info.name);
    const ModelConfig c = preset_config(info.name);
    const ModelConfig back = parse_config(config_to_json(c), "back");
    CHECK(back.attention_kind.index() == c.attention_kind.index());
    CHECK((back.shaw() != nullptr) == (c.shaw() != nullptr));
    CHECK((back.adaptive_span() != nullptr) == (c.adaptive_span() != nullptr));
  }
}
