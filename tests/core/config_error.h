#pragma once
// The message parse_config gives for a config text ("" when it parses), for tests that check
// which key a refusal names.
#include <string>

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas::test {

inline std::string config_error_of(const std::string& json) {
  try {
    parse_config(json, "t.json");
  } catch (const AtlasError& e) {
    return e.what();
  }
  return "";
}

}  // namespace atlas::test
