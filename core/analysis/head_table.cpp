// Per-head tables by map family (head_table.h).
#include "core/analysis/head_table.h"

#include <algorithm>

namespace atlas {

std::vector<HeadTable> head_tables(const std::vector<HeadValue>& values, double fill) {
  std::vector<HeadTable> out;
  auto row_of = [](const AttentionMap& m) { return m.step > 0 ? m.step - 1 : m.layer; };
  auto name_of = [](const AttentionMap& m) {
    return m.stack + "." + m.sublayer + (m.segment >= 0 ? ".seg" + std::to_string(m.segment) : "");
  };
  auto family = [&](const AttentionMap& m) {
    return std::find_if(out.begin(), out.end(), [&](const HeadTable& f) { return f.name == name_of(m); });
  };
  for (const HeadValue& v : values) {
    auto f = family(*v.map);
    if (f == out.end()) {
      out.push_back({name_of(*v.map), *v.map, v.map->step > 0, 0, 0, {}});
      f = out.end() - 1;
    }
    f->layers = std::max(f->layers, row_of(*v.map) + 1);
    f->heads = std::max(f->heads, v.head + 1);
  }
  for (HeadTable& f : out) f.values.assign(size_t(f.layers * f.heads), fill);
  for (const HeadValue& v : values) {
    HeadTable& f = *family(*v.map);
    f.values[size_t(row_of(*v.map) * f.heads + v.head)] = v.value;
  }
  return out;
}

}  // namespace atlas
