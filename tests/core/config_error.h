#pragma once
// Config texts in tests: parsed (as "test.json"), or the message parse_config refuses them with
// ("" when it parses), for tests that check which key a refusal names.
#include <string>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas::test {

inline ModelConfig parse(const std::string& json) { return parse_config(json, "test.json"); }

inline std::string config_error_of(const std::string& json) {
  try {
    parse_config(json, "t.json");
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "";
}

// A decoder-only config (pre-norm, no absolute positions, 64 positions) that every stack kind
// and attention kind can start from, with `sections` (comma-separated JSON members) added.
inline std::string decoder_config_with(const std::string& sections) {
  return R"({"architecture": "decoder", "positional": "none", "norm_position": "pre", )"
         R"("max_positions": 64, )" +
         sections + "}";
}

}  // namespace atlas::test
