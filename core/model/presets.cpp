#include "core/model/presets.h"

#include <nlohmann/json.hpp>

#include "core/tensor/error.h"

namespace atlas {

const std::vector<std::pair<std::string, std::string>>& embedded_presets();  // generated

namespace {

const std::string* find_preset(const std::string& name) {
  for (const auto& [n, json] : embedded_presets())
    if (n == name) return &json;
  return nullptr;
}

// "family" is presentation metadata for the gallery; it is not part of the model config.
std::pair<std::string, std::string> split_family(const std::string& text, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(text);
  std::string family = "other";
  if (j.is_object() && j.contains("family")) {
    family = j["family"].get<std::string>();
    j.erase("family");
  }
  return {j.dump(), family};
}

}  // namespace

std::vector<PresetInfo> list_presets() {
  std::vector<PresetInfo> out;
  for (const auto& [name, json] : embedded_presets()) {
    auto [config_text, family] = split_family(json, name);
    ModelConfig c = parse_config(config_text, "preset:" + name);
    out.push_back({name, c.description, family});
  }
  return out;
}

std::string preset_json(const std::string& name) {
  const std::string* json = find_preset(name);
  if (!json) {
    std::vector<std::string> names;
    for (const auto& p : embedded_presets()) names.push_back(p.first);
    std::string hint = nearest(name, names);
    throw AtlasError("unknown preset \"" + name + "\"" +
                     (hint.empty() ? "" : "; did you mean \"" + hint + "\"?") +
                     " (`atlas presets` lists them)");
  }
  return split_family(*json, name).first;
}

ModelConfig preset_config(const std::string& name) {
  ModelConfig c = parse_config(preset_json(name), "preset:" + name);
  if (c.name.empty()) c.name = name;
  return c;
}

}  // namespace atlas
