// The "alibi" config section and ALiBi's rows of the compatibility table (core/variants/alibi/
// alibi_config.cpp): what a file turns on, what it refuses and with which keys named, and the
// preset's slopes from Press's rule (8 heads: 2^-1 ... 2^-8).
#include <catch2/catch.hpp>

#include "core/config/config.h"
#include "core/model/presets.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/alibi/alibi_slopes.h"
#include "tests/core/config_error.h"

using namespace atlas;
using atlas::test::config_error_of;
using atlas::test::decoder_config_with;
using Catch::Matchers::Contains;

TEST_CASE("the alibi section turns ALiBi on and round-trips", "[config][alibi]") {
  const ModelConfig c =
      parse_config(decoder_config_with(R"("alibi": {"enabled": true, "bias_max": 16})"), "t.json");
  REQUIRE(alibi_of(c) != nullptr);
  CHECK(alibi_of(c)->bias_max == 16.0f);
  CHECK(c.shaw() == nullptr);
  const ModelConfig again = parse_config(config_to_json(c), "again");
  REQUIRE(alibi_of(again) != nullptr);
  CHECK(alibi_of(again)->bias_max == 16.0f);
  // "enabled": false is range-checked and dropped, like every part of softmax attention.
  CHECK(alibi_of(parse_config(decoder_config_with(R"("alibi": {"enabled": false})"), "t")) ==
        nullptr);
}

TEST_CASE("alibi refuses bad values and the choices it cannot be combined with, naming both keys",
          "[config][alibi][bad-input]") {
  CHECK_THAT(config_error_of(decoder_config_with(R"("alibi": {"enabled": true, "bias_max": 0})")),
             Contains("alibi.bias_max must be in (0, 64), got 0"));
  CHECK_THAT(config_error_of(decoder_config_with(R"("alibi": {"enabled": true, "bias_max": -8})")),
             Contains("alibi.bias_max"));
  CHECK_THAT(config_error_of(decoder_config_with(R"("alibi": {"enabled": true, "slopes": 8})")),
             Contains("slopes") && Contains("bias_max"));  // unknown key, nearest suggested
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("alibi": {"enabled": true}, "shaw": {"enabled": true})")),
             Contains("alibi.enabled cannot be combined with shaw.enabled"));
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("alibi": {"enabled": true}, "performer": {"enabled": true})")),
             Contains("alibi.enabled") && Contains("performer.enabled"));
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("alibi": {"enabled": true}, "xl": {"enabled": true})")),
             Contains("alibi.enabled cannot be combined with xl.enabled"));
  CHECK_THAT(config_error_of(R"({"architecture": "decoder", "positional": "rotary", )"
                             R"("alibi": {"enabled": true}})"),
             Contains("alibi.enabled cannot be combined with positional \"rotary\""));
  // The groups expand: grouped-query heads exclude every choice of @not_plain, ALiBi among them.
  CHECK_THAT(config_error_of(decoder_config_with(
                 R"("alibi": {"enabled": true}, "attention": {"kv_heads": 2})")),
             Contains("attention.kv_heads cannot be combined with alibi.enabled"));
}

TEST_CASE("the alibi-lm preset: 8 heads with slopes 2^-1 ... 2^-8, no position embeddings",
          "[config][alibi][presets]") {
  const ModelConfig c = preset_config("alibi-lm");
  REQUIRE(alibi_of(c) != nullptr);
  CHECK(c.positional == Positional::None);
  CHECK(c.n_heads == 8);
  const std::vector<float> m = alibi_slopes(c.n_heads, alibi_of(c)->bias_max);
  REQUIRE(m.size() == 8);
  double expected = 1.0;
  for (float slope : m) CHECK(double(slope) == (expected /= 2));
}
