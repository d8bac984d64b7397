#include "core/model/trace.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas {

namespace {

// The map `name` is or is named under: its shortest dotted prefix that is a described map or has
// a map's name (attention_map.h); "" when none.
std::string trace_owning_map(const Trace& trace, const std::string& name) {
  for (size_t dot = name.find('.');; dot = name.find('.', dot + 1)) {
    const std::string prefix = dot == std::string::npos ? name : name.substr(0, dot);
    if (trace.attention_map(prefix) || is_attention_array_name(prefix)) return prefix;
    if (dot == std::string::npos) return "";
  }
}

bool map_selected(const std::vector<std::string>& only_maps, const std::string& map) {
  return std::find(only_maps.begin(), only_maps.end(), map) != only_maps.end();
}

// "selected map "X" is not an attention map of this run; its maps: a, b, ... (12 in all)"
std::string unknown_map_message(const Trace& trace, const std::string& name) {
  std::string message = "selected map \"" + name + "\" is not an attention map of this run";
  if (const auto companion = companion_of(name); companion && trace.attention_map(companion->first))
    message += " (it is a companion of " + companion->first + ": name the map)";
  const std::vector<AttentionMap>& maps = trace.attention_maps;
  if (maps.empty()) return message + "; the run traced no attention map";
  message += "; its maps: ";
  const size_t shown = std::min<size_t>(maps.size(), 6);
  for (size_t i = 0; i < shown; ++i) message += (i ? ", " : "") + maps[i].array;
  if (shown < maps.size()) message += ", ... (" + std::to_string(maps.size()) + " in all)";
  return message;
}

}  // namespace

bool Trace::records(const std::string& name) const {
  if (only_maps.empty()) return true;
  const std::string owner = trace_owning_map(*this, name);
  return owner.empty() || map_selected(only_maps, owner);
}

void Trace::add(std::string name, std::string meaning, Tensor t, DType dtype) {
  if (!records(name)) return;
  arrays.push_back({std::move(name), std::move(meaning), dtype, std::move(t)});
}

void append_trace_row(Trace& trace, const std::string& name, const std::string& meaning,
                      const std::vector<float>& row, Shape row_shape) {
  for (auto& a : trace.arrays)
    if (a.name == name) {
      a.tensor.shape[0] += 1;
      a.tensor.data.insert(a.tensor.data.end(), row.begin(), row.end());
      return;
    }
  Shape shape{1};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  Tensor t(shape);
  t.data.assign(row.begin(), row.end());
  trace.add(name, meaning, std::move(t));
}

const TracedArray* Trace::find(const std::string& name) const {
  if (name.empty()) return nullptr;  // an absent companion (AttentionCompanions), even in a dump naming an array ""
  for (const auto& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> Trace::names() const {
  std::vector<std::string> out;
  out.reserve(arrays.size());
  for (const auto& a : arrays) out.push_back(a.name);
  return out;
}

void Trace::describe_attention(AttentionMap m) {
  for (AttentionMap& existing : attention_maps)
    if (existing.array == m.array) {
      existing = std::move(m);  // described again (a re-run of the same sub-layer): the last wins
      return;
    }
  attention_maps.push_back(std::move(m));
}

const AttentionMap* Trace::attention_map(const std::string& array) const {
  for (const AttentionMap& m : attention_maps)
    if (m.array == array) return &m;
  return nullptr;
}

void Trace::finalize_attention_maps() {
  if (!only_maps.empty()) {
    for (const std::string& name : only_maps)
      if (!attention_map(name)) throw AtlasError(unknown_map_message(*this, name));
    std::erase_if(arrays, [&](const TracedArray& a) { return !records(a.name); });
    std::erase_if(attention_maps, [&](const AttentionMap& m) { return !map_selected(only_maps, m.array); });
  }
  for (AttentionMap& m : attention_maps) {
    const TracedArray* dense = find(m.array);
    m.companions = traced_companions(*this, m.array);
    const TracedArray* values = find(m.companions.values);
    m.dense = dense && dense->tensor.shape.size() == 3;
    m.csr = find(m.companions.indptr) && find(m.companions.indices) && values &&
            values->tensor.shape.size() == 2;
    if (m.dense) {
      const Shape& s = dense->tensor.shape;
      if (s[1] != m.queries.count || s[2] != m.keys.count)
        throw AtlasError("trace: attention array " + m.array + " is [" + std::to_string(s[0]) +
                         ", " + std::to_string(s[1]) + ", " + std::to_string(s[2]) +
                         "] but is described with " + std::to_string(m.queries.count) +
                         " queries and " + std::to_string(m.keys.count) + " keys");
      m.heads = s[0];
    } else if (m.csr) {
      m.heads = values->tensor.shape[0];
    }
    if (m.on_demand) m.on_demand = !m.dense && find(m.companions.q) && find(m.companions.k);
  }
  std::erase_if(attention_maps, [](const AttentionMap& m) { return !m.dense && !m.csr && !m.on_demand; });
}

}  // namespace atlas
