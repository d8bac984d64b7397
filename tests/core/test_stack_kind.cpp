// The stack as one typed choice (core/config/stack_kind.h) and the one compatibility table
// (core/config/variant_choices.cpp). Oracles: hand-written config texts and the pairs the source
// papers' models cannot share a sub-layer in, written out here rather than read from the table.
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "core/config/config.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "tests/core/config_error.h"

using namespace atlas;
using Catch::Contains;

namespace {

using test::config_error_of;
using test::decoder_config_with;

}  // namespace

TEST_CASE("each stack kind section chooses the stack; without one it is standard", "[config][stack]") {
  CHECK(std::holds_alternative<StandardStack>(parse_config("{}", "t").stack));
  const ModelConfig xl =
      parse_config(decoder_config_with(R"("xl": {"enabled": true, "mem_len": 7})"), "t");
  REQUIRE(xl.xl());
  CHECK(xl.xl()->mem_len == 7);
  CHECK_FALSE(xl.xl()->gating);
  CHECK(xl.universal() == nullptr);
  CHECK(std::string(stack_kind_name(xl.stack)) == "xl");

  const ModelConfig ut = parse_config(R"({"universal": {"enabled": true, "max_steps": 3}})", "t");
  REQUIRE(ut.universal());
  CHECK(ut.universal()->max_steps == 3);
  CHECK(std::string(stack_kind_name(ut.stack)) == "universal");

  // A disabled section's fields are range-checked, then dropped: the stack stays standard and
  // the written config carries the defaults.
  const ModelConfig off = parse_config(R"({"universal": {"enabled": false, "max_steps": 3}})", "t");
  CHECK(off.standard_stack());
  CHECK(config_to_json(off) == config_to_json(parse_config("{}", "t")));
  CHECK_THAT(config_error_of(R"({"universal": {"enabled": false, "max_steps": 0}})"),
             Contains("universal.max_steps"));
  CHECK_THAT(config_error_of(R"({"ntm": {"enabled": false, "memory_slot": 4}})"), Contains("memory_slots"));
}

TEST_CASE("two stack kinds are refused naming both; GTrXL gates need xl", "[config][stack]") {
  const std::string two = config_error_of(R"({"universal": {"enabled": true}, "xl": {"enabled": true}})");
  CHECK_THAT(two, Contains("universal.enabled") && Contains("xl.enabled") && Contains("t.json"));
  CHECK_THAT(config_error_of(
                 decoder_config_with(R"("ntm": {"enabled": true}, "snail": {"enabled": true})")),
             Contains("ntm.enabled") && Contains("snail.enabled"));
  CHECK_THAT(config_error_of(decoder_config_with(R"("gating": {"enabled": true})")),
             Contains("gating.enabled"));
  // Reformer's reversible stack is chosen inside the "lsh" section (core/variants/reformer,
  // read before core/variants/transformer_xl's "xl": sections are read in folder-name order).
  CHECK_THAT(config_error_of(
                 decoder_config_with(R"("xl": {"enabled": true}, "lsh": {"reversible": true})")),
             Contains("xl.enabled and lsh.reversible"));
  CHECK_THAT(config_error_of(
                 decoder_config_with(R"("lsh": {"reversible": true}, "snail": {"enabled": true})")),
             Contains("snail.enabled and lsh.reversible"));
  const ModelConfig reversible =
      parse_config(decoder_config_with(R"("lsh": {"reversible": true, "ff_chunks": 3})"), "t");
  REQUIRE(reversible.reversible());
  CHECK(reversible.reversible()->ff_chunks == 3);
  CHECK(reversible.lsh() == nullptr);  // reversible layers around plain softmax attention
  const ModelConfig gtrxl =
      parse_config(decoder_config_with(
                       R"("xl": {"enabled": true}, "gating": {"enabled": true, "type": "input"})"),
                   "t");
  REQUIRE(gtrxl.gating());
  CHECK(gtrxl.gating()->type == GateType::Input);
}

TEST_CASE("the compatibility table refuses pairs that share a sub-layer, naming both keys", "[config][stack]") {
  struct Pair {
    std::string sections, first, second;
  };
  const Pair refused[] = {
      {R"("shaw": {"enabled": true}, "sparse": {"pattern": "strided"})", "shaw.enabled", "sparse.pattern"},
      {R"("performer": {"enabled": true}, "lsh": {"enabled": true, "chunk_length": 8})", "performer.enabled",
       "lsh.enabled"},
      {R"("lsh": {"enabled": true, "chunk_length": 8}, "sparse": {"pattern": "strided"})", "lsh.enabled",
       "sparse.pattern"},
      {R"("xl": {"enabled": true}, "adaptive_span": {"enabled": true, "max_span": 8})", "xl.enabled",
       "adaptive_span.enabled"},
      {R"("ntm": {"enabled": true}, "shaw": {"enabled": true})", "ntm.enabled", "shaw.enabled"},
      {R"("attention": {"kv_heads": 2}, "sparse": {"pattern": "strided"})", "attention.kv_heads",
       "sparse.pattern"},
      {R"("score": {"function": "additive"}, "shaw": {"enabled": true})", "score.function", "shaw.enabled"},
      {R"("ffn": {"gated": true}, "snail": {"enabled": true})", "ffn.gated", "snail.enabled"},
  };
  for (const Pair& p : refused) {
    INFO(p.sections);
    CHECK_THAT(config_error_of(decoder_config_with(p.sections)),
               Contains(p.first + " cannot be combined with " + p.second));
  }
  // Pairs the papers' models do combine stay allowed.
  CHECK_NOTHROW(parse_config(
      decoder_config_with(
          R"("shaw": {"enabled": true}, "adaptive_span": {"enabled": true, "max_span": 8})"),
      "t"));
  CHECK_NOTHROW(parse_config(
      decoder_config_with(R"("xl": {"enabled": true}, "gating": {"enabled": true})"), "t"));
  CHECK_NOTHROW(parse_config(
      R"({"architecture": "decoder", "positional": "rotary", "attention": {"kv_heads": 2, "sliding_window": 4}, "ffn": {"gated": true}})",
      "t"));
}

TEST_CASE("every preset's config writes and reads back to the same stack and text", "[config][stack][presets]") {
  for (const PresetInfo& info : list_presets()) {
    INFO(info.name);
    const ModelConfig c = preset_config(info.name);
    const std::string json = config_to_json(c);
    const ModelConfig back = parse_config(json, "back");
    CHECK(back.stack.index() == c.stack.index());
    CHECK(config_to_json(back) == json);
  }
}
