#include "core/model/trace.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas {

void Trace::add(std::string name, std::string meaning, Tensor t, DType dtype) {
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
