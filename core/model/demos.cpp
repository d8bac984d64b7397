#include "core/model/demos.h"

#include "core/config/config.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

DemoInfo info_of(const EmbeddedDemo& d) {
  const ModelConfig c = parse_config(d.config_json, "demo:" + d.name);
  return {d.name, c.description, chomp(d.sample), chomp(d.command)};
}

}  // namespace

std::vector<DemoInfo> list_demos() {
  std::vector<DemoInfo> out;
  for (const EmbeddedDemo& d : embedded_demos()) out.push_back(info_of(d));
  return out;
}

const EmbeddedDemo& find_demo(const std::string& name) {
  std::vector<std::string> names;
  for (const EmbeddedDemo& d : embedded_demos()) {
    if (d.name == name) return d;
    names.push_back(d.name);
  }
  const std::string hint = nearest(name, names);
  throw AtlasError("unknown demo \"" + name + "\"" +
                   (hint.empty() ? "" : "; did you mean \"" + hint + "\"?") +
                   " (`atlas demos` lists them)");
}

DemoInfo demo_info(const std::string& name) { return info_of(find_demo(name)); }

}  // namespace atlas
