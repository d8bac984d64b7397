#pragma once
// The trace arrays of GTrXL's gates (docs/variants.md, "GTrXL"), named once for the producer
// (gtrxl.cpp) and every reader (the gates panel, tests): one [Lq, d_model] array of values in
// (0, 1) per gate activation g of every gated sub-layer, `<stack>.seg<s>.layer<i>.<sub>.gate.<g>`.
#include <cstdint>
#include <optional>
#include <string>

namespace atlas::gate_arrays {

struct GateArray {
  std::string stack;     // "decoder"
  int64_t segment = -1;  // -1: the name carries no segment
  int64_t layer = 0;
  std::string sublayer;  // "attn" | "ffn"
  std::string gate;      // "input", "output", "highway", "r", "z"
};

std::string name_of(const GateArray& a);
// The description of `name`, or nothing when it is not a gate array's name.
std::optional<GateArray> parse(const std::string& name);

}  // namespace atlas::gate_arrays
