#include "trace.h"

namespace atlas {

void Trace::add(std::string name, std::string meaning, Tensor t, DType dtype) {
  arrays.push_back({std::move(name), std::move(meaning), dtype, std::move(t)});
}

const TracedArray* Trace::find(const std::string& name) const {
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

}  // namespace atlas
