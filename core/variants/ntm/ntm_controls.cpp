// NTM manual mode: hand-given controller outputs read from JSON (format in ntm.h and
// docs/variants.md). Strict like the model config: unknown keys and bad values name the key.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/tensor/error.h"
#include "core/variants/ntm/ntm.h"

namespace atlas {

namespace {

using Json = nlohmann::json;

[[noreturn]] void controls_error(const std::string& origin, const std::string& what) {
  throw AtlasError(origin + ": " + what);
}

void check_keys(const Json& o, const std::vector<std::string>& known, const std::string& where,
                const std::string& origin) {
  if (!o.is_object()) controls_error(origin, where + " must be an object");
  for (const auto& [key, value] : o.items())
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      controls_error(origin, where + ": unknown key \"" + key + "\" (known: " + list + ")");
    }
}

float number(const Json& v, const std::string& key, const std::string& origin) {
  if (!v.is_number()) controls_error(origin, key + " must be a number");
  return static_cast<float>(v.get<double>());
}

RowVec vector_of(const Json& v, const std::string& key, const std::string& origin) {
  if (!v.is_array()) controls_error(origin, key + " must be an array of numbers");
  RowVec r(static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) r[int64_t(i)] = number(v[i], key + "[" + std::to_string(i) + "]", origin);
  return r;
}

NtmHeadControls controls_of(const Json& o, const NtmHeadSpec& head, const std::string& where,
                            const std::string& origin) {
  std::vector<std::string> known = {"key", "beta", "gate", "shift", "gamma"};
  if (head.write) known.insert(known.end(), {"erase", "add"});
  check_keys(o, known, where, origin);
  NtmHeadControls c;
  for (const char* required : {"key", "shift"})
    if (!o.contains(required)) controls_error(origin, where + "." + required + " is missing");
  c.key = vector_of(o["key"], where + ".key", origin);
  c.shift = vector_of(o["shift"], where + ".shift", origin);
  if (o.contains("beta")) c.beta = number(o["beta"], where + ".beta", origin);
  if (o.contains("gate")) c.gate = number(o["gate"], where + ".gate", origin);
  if (o.contains("gamma")) c.gamma = number(o["gamma"], where + ".gamma", origin);
  if (head.write) {
    for (const char* required : {"erase", "add"})
      if (!o.contains(required))
        controls_error(origin, where + "." + required + " is missing (write head)");
    c.erase = vector_of(o["erase"], where + ".erase", origin);
    c.add = vector_of(o["add"], where + ".add", origin);
  }
  return c;
}

}  // namespace

NtmRun ntm_run_from_json(const std::string& text, const std::string& origin) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    controls_error(origin, std::string("not valid JSON: ") + e.what());
  }
  check_keys(j, {"memory", "heads", "steps"}, "top level", origin);
  for (const char* required : {"memory", "heads", "steps"})
    if (!j.contains(required)) controls_error(origin, std::string(required) + " is missing");
  const Json& mem = j["memory"];
  if (!mem.is_array() || mem.empty() || mem.size() > 4096)
    controls_error(origin, "memory must be an array of 1..4096 rows");
  Mat memory0;
  for (size_t i = 0; i < mem.size(); ++i) {
    RowVec row = vector_of(mem[i], "memory[" + std::to_string(i) + "]", origin);
    if (i == 0) {
      if (row.size() < 1 || row.size() > 1024)
        controls_error(origin, "memory rows need 1..1024 entries");
      memory0.resize(int64_t(mem.size()), row.size());
    } else if (row.size() != memory0.cols()) {
      controls_error(origin, "memory[" + std::to_string(i) + "] has " + std::to_string(row.size()) +
                                 " entries, memory[0] has " + std::to_string(memory0.cols()));
    }
    memory0.row(int64_t(i)) = row;
  }
  if (!j["heads"].is_array() || j["heads"].empty())
    controls_error(origin, "heads must be a non-empty array");
  std::vector<NtmHeadSpec> heads;
  for (size_t h = 0; h < j["heads"].size(); ++h) {
    const Json& o = j["heads"][h];
    const std::string where = "heads[" + std::to_string(h) + "]";
    check_keys(o, {"name", "write"}, where, origin);
    if (!o.contains("name") || !o["name"].is_string() || o["name"].get<std::string>().empty())
      controls_error(origin, where + ".name must be a non-empty string");
    NtmHeadSpec s{o["name"].get<std::string>(), false};
    if (o.contains("write")) {
      if (!o["write"].is_boolean()) controls_error(origin, where + ".write must be true or false");
      s.write = o["write"].get<bool>();
    }
    for (const auto& other : heads)
      if (other.name == s.name)
        controls_error(origin, where + ".name \"" + s.name + "\" is used twice");
    heads.push_back(s);
  }
  if (!j["steps"].is_array() || j["steps"].empty() || j["steps"].size() > 10000)
    controls_error(origin, "steps must be an array of 1..10000 steps");
  std::vector<std::vector<NtmHeadControls>> steps;
  for (size_t t = 0; t < j["steps"].size(); ++t) {
    const Json& o = j["steps"][t];
    const std::string where = "steps[" + std::to_string(t) + "]";
    std::vector<std::string> names;
    for (const auto& h : heads) names.push_back(h.name);
    check_keys(o, names, where, origin);
    std::vector<NtmHeadControls> per_head;
    for (const auto& h : heads) {
      if (!o.contains(h.name)) controls_error(origin, where + "." + h.name + " is missing");
      per_head.push_back(controls_of(o[h.name], h, where + "." + h.name, origin));
    }
    steps.push_back(std::move(per_head));
  }
  try {
    return ntm_run_controls(heads, memory0, steps);
  } catch (const AtlasError& e) {
    controls_error(origin, e.what());
  }
}

}  // namespace atlas
