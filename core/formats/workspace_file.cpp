// Workspace files (workspace_file.h).
#include "core/formats/workspace_file.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/formats/input_file.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"

namespace atlas {

namespace {

constexpr const char* kWorkspaceFormat = "attention-atlas-workspace";
constexpr int kWorkspaceVersion = 1;
constexpr size_t kWorkspaceMaxDepth = 8;  // the format nests 5 levels (tools.patching.result.shape)

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? uint8_t(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

struct WorkspaceReader {
  std::string origin;
  [[noreturn]] void fail(const std::string& what) const { throw AtlasError(origin + ": " + what); }

  std::string text(const nlohmann::json& o, const char* key, const std::string& fallback) const {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_string()) fail(std::string("\"") + key + "\" must be a string");
    return o[key].get<std::string>();
  }
  // A whole number within [lo, hi]; written by Qt as a JSON double, so 3.0 is 3. The range is
  // checked on the double, before any conversion (a cast of 1e300 to an integer is undefined).
  int64_t integer(const nlohmann::json& o, const char* key, int64_t fallback, int64_t lo,
                  int64_t hi) const {
    if (!o.contains(key)) return fallback;
    const nlohmann::json& v = o[key];
    const std::string range = std::string("\"") + key + "\" must be an integer from " +
                              std::to_string(lo) + " to " + std::to_string(hi);
    if (v.is_number_integer()) {
      const bool big = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi);
      if (big || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        fail(range + ", got " + v.dump());
      return v.get<int64_t>();
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!(d >= double(lo) && d <= double(hi)) || d != std::floor(d)) fail(range + ", got " + v.dump());
      return int64_t(d);
    }
    fail(range);
  }
  std::string choice(const nlohmann::json& o, const char* key, const std::string& fallback,
                     const std::vector<std::string>& allowed) const {
    const std::string v = text(o, key, fallback);
    for (const std::string& a : allowed)
      if (v == a) return v;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(std::string("\"") + key + "\" must be one of " + list + ", not \"" +
         escape_invalid_utf8(v.substr(0, 80)) + "\"");
  }
  bool boolean(const nlohmann::json& o, const char* key) const {
    if (!o.contains(key)) return false;
    if (!o[key].is_boolean()) fail(std::string("\"") + key + "\" must be true or false");
    return o[key].get<bool>();
  }
  // Base64 as Qt writes it (with padding); whitespace is skipped, anything else refused.
  std::string bytes(const nlohmann::json& o, const char* key) const {
    const std::string s = text(o, key, "");
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    bool padded = false;
    for (char c : s) {
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
      if (c == '=') {
        padded = true;
        continue;
      }
      const char* at = c ? std::char_traits<char>::find(kBase64, 64, c) : nullptr;
      if (!at || padded) fail(std::string("\"") + key + "\" is not base64");
      acc = (acc << 6 | uint32_t(at - kBase64)) & 0xFFFFFF;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += char((acc >> bits) & 0xFF);
      }
    }
    return out;
  }
};

}  // namespace

std::string encode_workspace(const WorkspaceFile& w) {
  using ojson = nlohmann::ordered_json;
  ojson o = {{"format", kWorkspaceFormat},
                   {"version", kWorkspaceVersion},
                   {"model", w.model},
                   {"source", w.source},
                   {"target", w.target},
                   {"selection",
                    {{"stack", w.stack},
                     {"kind", w.kind},
                     {"layer", w.layer},
                     {"head", w.head},
                     {"segment", w.segment}}},
                   {"query", w.query},
                   {"colormap", w.colormap},
                   {"scale", w.scale},
                   {"normalization", w.normalization},
                   {"value_weighted", w.value_weighted},
                   {"shared_grid_scale", w.shared_grid_scale},
                   {"open_panels", w.open_panels},
                   {"window_state", to_base64(w.window_state)},
                   {"geometry", to_base64(w.geometry)}};
  if (!w.tools.empty()) {
    ojson tools = ojson::object();
    for (const auto& [name, state] : w.tools) tools[name] = ojson::parse(state, nullptr, false);
    o["tools"] = tools;
  }
  return o.dump(4, ' ', false, ojson::error_handler_t::replace) + "\n";
}

WorkspaceFile parse_workspace(std::string_view json, const std::string& origin) {
  const WorkspaceReader r{origin};
  nlohmann::json o;
  try {
    o = parse_json_text(json, "", JsonLimits{kWorkspaceMaxDepth, true});
  } catch (const AtlasError& e) {
    r.fail(std::string("not a workspace (") + e.what() + ")");
  }
  if (!o.is_object()) r.fail("not a workspace (the JSON is not an object)");
  if (!o.contains("format") || o["format"] != kWorkspaceFormat)
    r.fail(std::string("not a workspace (\"format\" is not \"") + kWorkspaceFormat + "\")");
  const int64_t version = r.integer(o, "version", 0, 0, 1 << 20);
  if (version != kWorkspaceVersion)
    r.fail("workspace version " + std::to_string(version) + "; this Attention Atlas reads version " +
           std::to_string(kWorkspaceVersion));
  static const std::vector<std::string> known = {
      "format", "version",       "model",          "source",         "target",
      "selection", "query",      "colormap",       "scale",          "normalization",
      "value_weighted", "shared_grid_scale", "open_panels", "window_state", "geometry", "tools"};
  for (const auto& [key, value] : o.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      r.fail("unknown key \"" + escape_invalid_utf8(key.substr(0, 80)) + "\"");
  WorkspaceFile w;
  w.model = r.text(o, "model", "");
  if (w.model.find_first_not_of(" \t\r\n") == std::string::npos)
    r.fail("\"model\" is missing or empty");
  w.source = r.text(o, "source", "");
  w.target = r.text(o, "target", "");
  if (o.contains("selection")) {
    const nlohmann::json& s = o["selection"];
    if (!s.is_object()) r.fail("\"selection\" must be an object");
    for (const auto& [key, value] : s.items())
      if (key != "stack" && key != "kind" && key != "layer" && key != "head" && key != "segment")
        r.fail("unknown key \"selection." + escape_invalid_utf8(key.substr(0, 80)) + "\"");
    w.stack = r.text(s, "stack", w.stack);
    w.kind = r.text(s, "kind", w.kind);
    w.layer = r.integer(s, "layer", 0, 0, kWorkspaceMaxIndex);
    w.head = r.integer(s, "head", 0, kWorkspaceLowestHead, kWorkspaceMaxIndex);
    w.segment = r.integer(s, "segment", 0, 0, kWorkspaceMaxIndex);
  }
  w.query = r.integer(o, "query", -1, -1, kWorkspaceMaxQuery);
  w.colormap = r.choice(o, "colormap", "viridis", {"viridis", "magma", "diverging"});
  w.scale = r.choice(o, "scale", "linear", {"linear", "log"});
  w.normalization = r.choice(o, "normalization", "global", {"global", "row"});
  w.value_weighted = r.boolean(o, "value_weighted");
  w.shared_grid_scale = r.boolean(o, "shared_grid_scale");
  if (o.contains("open_panels")) {
    if (!o["open_panels"].is_array()) r.fail("\"open_panels\" must be a list of dock names");
    for (const nlohmann::json& v : o["open_panels"]) {
      if (!v.is_string()) r.fail("\"open_panels\" must be a list of dock names");
      w.open_panels.push_back(v.get<std::string>());
    }
  }
  w.window_state = r.bytes(o, "window_state");
  w.geometry = r.bytes(o, "geometry");
  if (o.contains("tools")) {
    if (!o["tools"].is_object()) r.fail("\"tools\" must be an object");
    for (const auto& [key, value] : o["tools"].items()) {
      if (key != "patching" && key != "dla" && key != "sweep" && key != "qk" && key != "compare" && key != "search" &&
          key != "corpus" && key != "ablation")
        r.fail("unknown key \"tools." + escape_invalid_utf8(key.substr(0, 80)) + "\"");
      if (!value.is_object()) r.fail("\"tools." + key + "\" must be an object");
      w.tools[key] = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  return w;
}

WorkspaceFile read_workspace_file(const std::string& path) {
  // The input-file policy's workspace kind: regular files only, never blocking, 4 MB at most.
  return parse_workspace(read_input_file(path, InputKind::Workspace), path);
}

}  // namespace atlas
