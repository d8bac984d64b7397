#include "core/variants/gtrxl/gate_arrays.h"

#include <cctype>
#include <vector>

#include "core/model/array_name_parts.h"

namespace atlas::gate_arrays {

namespace {

bool lower_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::islower(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

std::string name_of(const GateArray& a) {
  std::string n = a.stack + ".";
  if (a.segment >= 0) n += "seg" + std::to_string(a.segment) + ".";
  return n + "layer" + std::to_string(a.layer) + "." + a.sublayer + ".gate." + a.gate;
}

std::optional<GateArray> parse(const std::string& name) {
  const std::vector<std::string> parts = dotted_parts(name);
  // stack [seg<s>] layer<i> sub gate g
  if (parts.size() != 5 && parts.size() != 6) return std::nullopt;
  GateArray a;
  size_t k = 0;
  a.stack = parts[k++];
  if (parts.size() == 6) {
    const auto seg = number_after(parts[k++], "seg");
    if (!seg) return std::nullopt;
    a.segment = *seg;
  }
  const auto layer = number_after(parts[k++], "layer");
  if (!layer) return std::nullopt;
  a.layer = *layer;
  a.sublayer = parts[k++];
  if (parts[k++] != "gate") return std::nullopt;
  a.gate = parts[k];
  if (!lower_word(a.stack) || !lower_word(a.sublayer) || !lower_word(a.gate)) return std::nullopt;
  return a;
}

}  // namespace atlas::gate_arrays
