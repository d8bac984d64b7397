#include "core/formats/dump.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/config/config_json.h"
#include "core/config/config_limits.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/formats/output_folder.h"
#include "core/formats/json_text.h"
#include "core/tensor/error.h"
#include "core/formats/npy.h"

namespace atlas {

namespace fs = std::filesystem;

namespace {

nlohmann::json tokens_json(const std::vector<TokenInfo>& tokens) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i)
    out.push_back({{"index", i}, {"id", tokens[i].id}, {"label", tokens[i].label}});
  return out;
}

nlohmann::json span_json(const TokenSpan& s) {
  return {{"tokens", token_side_name(s.side)}, {"begin", s.begin}, {"count", s.count}};
}

nlohmann::json map_json(const AttentionMap& m) {
  std::string storage = m.dense && m.csr ? "dense+csr" : m.dense ? "dense" : m.csr ? "csr" : "on-demand";
  nlohmann::json j = {{"array", m.array},
                      {"stack", m.stack},
                      {"sublayer", m.sublayer},
                      {"layer", m.layer},
                      {"kind", attention_map_kind_name(m.kind)},
                      {"heads", m.heads},
                      {"queries", span_json(m.queries)},
                      {"keys", span_json(m.keys)},
                      {"normalized", m.normalized},
                      {"storage", storage}};
  if (m.segment >= 0) j["segment"] = m.segment;
  if (m.step >= 0) j["step"] = m.step;
  if (m.round >= 0) j["round"] = m.round;
  if (m.memory_keys > 0) j["memory_keys"] = m.memory_keys;
  if (m.kv_heads > 0) j["kv_heads"] = m.kv_heads;
  if (!m.companions.mask.empty()) j["mask"] = m.companions.mask;
  if (m.on_demand)  // computed from its companions q and k with this rule (attention_on_demand.h)
    j["on_demand"] = {{"scale", m.scale}, {"causal", m.causal}, {"causal_offset", m.causal_offset},
                      {"window", m.window}};
  return j;
}

[[noreturn]] void bad_manifest(const std::string& path, const std::string& what) {
  config_json::fail(path, what);
}

// Typed reads through the config parser's Reader (same messages: "<path>: key must be ...").
const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) bad_manifest(path, std::string("missing \"") + key + "\"");
  return j[key];
}

int64_t integer(const nlohmann::json& j, const char* key, const std::string& path) {
  return config_json::Reader{path}.integer(member(j, key, path), key);
}

// An integer that indexes a model's part or a token list, within what any model has
// (core/config/config_limits.h): views size grids and label lists by these before any array
// is consulted. `what` names it in the message ("map encoder.layer0.attn: layer").
int64_t integer_in(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi,
                   const std::string& what, const std::string& path) {
  const int64_t v = integer(j, key, path);
  if (v < lo || v > hi)
    bad_manifest(path, what + " " + std::to_string(v) + " is out of range: it must be from " +
                           std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& path) {
  return config_json::Reader{path}.string(member(j, key, path), key);
}

TokenSpan span_from(const nlohmann::json& j, const std::string& path) {
  static const config_json::EnumTable<TokenSide> kSides = {
      {token_side_name(TokenSide::Source), TokenSide::Source},
      {token_side_name(TokenSide::Target), TokenSide::Target},
      {token_side_name(TokenSide::Positions), TokenSide::Positions}};
  TokenSpan s;
  s.side = config_json::Reader{path}.enumeration(member(j, "tokens", path), "tokens", kSides);
  s.begin = integer_in(j, "begin", 0, kMaxPositions, "token span begin", path);
  s.count = integer_in(j, "count", 0, kMaxPositions, "token span count", path);
  return s;
}

AttentionMap map_from(const nlohmann::json& j, const std::string& path) {
  static const config_json::EnumTable<AttentionMapKind> kKinds = [] {
    config_json::EnumTable<AttentionMapKind> t;
    for (AttentionMapKind k : {AttentionMapKind::Self, AttentionMapKind::Cross, AttentionMapKind::Memory,
                               AttentionMapKind::Implicit, AttentionMapKind::Sparse})
      t.push_back({attention_map_kind_name(k), k});
    return t;
  }();
  const config_json::Reader r{path};
  AttentionMap m;
  m.array = text(j, "array", path);
  m.stack = text(j, "stack", path);
  m.sublayer = text(j, "sublayer", path);
  const std::string name = "map " + m.array + ":";
  m.layer = integer_in(j, "layer", 0, kMaxLayers - 1, name + " layer", path);
  m.kind = r.enumeration(member(j, "kind", path), "attention map kind", kKinds);
  m.queries = span_from(member(j, "queries", path), path);
  m.keys = span_from(member(j, "keys", path), path);
  if (j.contains("segment")) m.segment = integer_in(j, "segment", -1, kMaxPositions, name + " segment", path);
  if (j.contains("step")) m.step = integer_in(j, "step", -1, kMaxUniversalSteps, name + " step", path);
  if (j.contains("round")) m.round = integer_in(j, "round", -1, kMaxPositions, name + " round", path);
  if (j.contains("memory_keys"))
    m.memory_keys = integer_in(j, "memory_keys", 0, m.keys.count, name + " memory_keys", path);
  if (j.contains("kv_heads")) m.kv_heads = integer_in(j, "kv_heads", 0, kMaxHeads, name + " kv_heads", path);
  if (m.kv_heads < 0 || (m.kv_heads > 0 && j.contains("heads") && j["heads"].is_number_integer() &&
                         (m.kv_heads > j["heads"].get<int64_t>() || j["heads"].get<int64_t>() % m.kv_heads != 0)))
    bad_manifest(path, "kv_heads " + std::to_string(m.kv_heads) + " does not divide the heads");
  if (j.contains("normalized")) m.normalized = r.boolean(j["normalized"], "normalized");
  if (j.contains("on_demand")) {
    const nlohmann::json& o = j["on_demand"];
    m.on_demand = true;
    m.heads = integer_in(j, "heads", 1, kMaxHeads, name + " heads", path);
    m.scale = r.number(member(o, "scale", path), "scale");
    m.causal = r.boolean(member(o, "causal", path), "causal");
    m.causal_offset = integer(o, "causal_offset", path);
    m.window = integer(o, "window", path);
    // Offsets and windows beyond the map's size change nothing; refusing them keeps i + offset
    // far from overflow.
    const int64_t reach = m.queries.count + m.keys.count + 1;
    if (m.heads < 1 || m.window < 0 || m.window > reach || m.causal_offset < -reach || m.causal_offset > reach ||
        !std::isfinite(m.scale))
      bad_manifest(path, m.array + ": on-demand map with " + std::to_string(m.heads) + " heads, causal offset " +
                             std::to_string(m.causal_offset) + ", window " + std::to_string(m.window));
  }
  return m;
}

}  // namespace

void write_dump(const std::string& dir, const Model& model, const RunResult& result) {
  write_trace_dump(dir, model.config().name, result.trace);
}

namespace {

bool is_dump_file(const std::string& name) {
  return name == "manifest.json" ||
         (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0);
}

bool is_dump_manifest(const std::string& path) {
  try {
    const nlohmann::json j = nlohmann::json::parse(read_input_file(path, InputKind::DumpManifest),
                                                   nullptr, false);
    return j.is_object() && j.value("format", "") == "attention-atlas-dump";
  } catch (const std::exception&) {  // unreadable, too large, not JSON: not an earlier dump
    return false;
  }
}

}  // namespace

bool check_dump_destination(const std::string& dir) {
  const FolderContents c = inspect_output_folder(dir, is_dump_file);
  if (!c.foreign.empty())
    throw AtlasError(dir + ": holds " + c.foreign + ", which is not part of a dump; nothing was "
                     "changed (dump into a new or empty folder, or an earlier dump)");
  if (!c.exists || c.empty) return false;
  const std::string manifest = (fs::path(dir) / "manifest.json").string();
  if (!is_dump_manifest(manifest))
    throw AtlasError(dir + ": is not empty and is not an earlier dump (no manifest.json with "
                     "\"format\": \"attention-atlas-dump\"); nothing was changed (dump into a "
                     "new or empty folder)");
  return true;
}

void write_trace_dump(const std::string& dir, const std::string& name, const Trace& trace) {
  check_dump_destination(dir);
  nlohmann::json manifest;
  manifest["format"] = "attention-atlas-dump";
  manifest["version"] = 2;  // 2: with "attention_maps" (version 1 dumps still read)
  manifest["model"] = name;
  manifest["tokens"] = tokens_json(trace.source_tokens);
  if (!trace.target_tokens.empty()) manifest["target_tokens"] = tokens_json(trace.target_tokens);
  nlohmann::json arrays = nlohmann::json::array();
  for (const auto& a : trace.arrays)
    arrays.push_back({{"name", a.name},
                      {"file", a.name + ".npy"},
                      {"shape", a.tensor.shape},
                      {"dtype", a.dtype == DType::F32 ? "float32" : "int32"},
                      {"meaning", a.meaning}});
  manifest["arrays"] = arrays;
  nlohmann::json maps = nlohmann::json::array();
  for (const AttentionMap& m : trace.attention_maps) maps.push_back(map_json(m));
  manifest["attention_maps"] = maps;
  // error_handler replace: labels are valid UTF-8 by contract, but never fail a dump on one.
  const std::string manifest_text =
      manifest.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // The whole folder at once: an earlier dump's arrays never outlive it, and a failed dump
  // leaves the earlier one as it was.
  replace_folder(dir, [&](const std::string& staging) {
    for (const auto& a : trace.arrays)
      write_npy((fs::path(staging) / (a.name + ".npy")).string(), a.tensor, a.dtype);
    write_file_atomically((fs::path(staging) / "manifest.json").string(), manifest_text);
  });
}

TraceDump read_trace_dump(const std::string& dir) {
  const std::string path = (fs::path(dir) / "manifest.json").string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw AtlasError(path + ": no such file (is " + dir + " a dump folder?)");
  const std::string text = read_input_file(path, InputKind::DumpManifest);
  return parse_trace_dump(text, path, [&](const std::string& file) {
    return read_npy((fs::path(dir) / file).string());
  });
}

TraceDump parse_trace_dump(const std::string& manifest_text, const std::string& path,
                           const std::function<Tensor(const std::string& file)>& load_array) {
  nlohmann::json manifest;
  try {
    manifest = parse_json_text(manifest_text, "");  // our own format: a repeated key is refused
  } catch (const AtlasError& e) {
    bad_manifest(path, std::string("not valid JSON: ") + e.what());
  }
  if (text(manifest, "format", path) != "attention-atlas-dump")
    bad_manifest(path, "\"format\" is not \"attention-atlas-dump\"");
  TraceDump d;
  d.version = static_cast<int>(integer(manifest, "version", path));
  if (d.version < 1 || d.version > 2)
    bad_manifest(path, "version " + std::to_string(d.version) + " is not one this build reads (1, 2)");
  d.model = text(manifest, "model", path);
  auto tokens = [&](const nlohmann::json& list, std::vector<TokenInfo>& out) {
    if (!list.is_array()) bad_manifest(path, "token lists must be arrays");
    for (const auto& t : list) {
      const int64_t id = integer(t, "id", path);
      config_json::check_range(id, 0, std::numeric_limits<int32_t>::max(), "token id", path);
      out.push_back({static_cast<int32_t>(id), text(t, "label", path)});
    }
  };
  tokens(member(manifest, "tokens", path), d.trace.source_tokens);
  if (manifest.contains("target_tokens")) tokens(manifest["target_tokens"], d.trace.target_tokens);
  const nlohmann::json& arrays = member(manifest, "arrays", path);
  if (!arrays.is_array()) bad_manifest(path, "\"arrays\" must be an array");
  for (const auto& a : arrays) {
    const std::string file = text(a, "file", path);
    if (file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == ".." )
      bad_manifest(path, "array file \"" + file + "\" must be a plain name inside the dump folder");
    const std::string dtype = text(a, "dtype", path);
    d.trace.add(text(a, "name", path), text(a, "meaning", path), load_array(file),
                dtype == "int32" ? DType::I32 : DType::F32);
  }
  if (d.version >= 2) {
    const nlohmann::json& maps = member(manifest, "attention_maps", path);
    if (!maps.is_array()) bad_manifest(path, "\"attention_maps\" must be an array");
    for (const auto& m : maps) d.trace.describe_attention(map_from(m, path));
  } else {
    for (AttentionMap& m : derive_attention_maps(d.trace)) d.trace.describe_attention(std::move(m));
  }
  try {
    d.trace.finalize_attention_maps();
  } catch (const AtlasError& e) {
    bad_manifest(path, e.what());
  }
  return d;
}

}  // namespace atlas
