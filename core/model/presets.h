#pragma once
// Built-in presets (assets/presets/*.json, embedded at build time).
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"

namespace atlas {

struct PresetInfo {
  std::string name;
  std::string description;
  std::string family;  // "vanilla", "relative/XL", "sparse/efficient", "recurrent/ACT", ...
};

std::vector<PresetInfo> list_presets();
// Throws AtlasError naming the unknown preset and suggesting the nearest name.
ModelConfig preset_config(const std::string& name);
std::string preset_json(const std::string& name);

}  // namespace atlas
