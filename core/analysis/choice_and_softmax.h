#pragma once
// Two helpers the output-metric analyses share (ablation sweeps, activation patching): a CLI
// choice read by name with the choices listed when it is unknown, and a log-softmax row in
// double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/error.h"

namespace atlas {

// The value named `s` among `choices`; else throws naming `flag` and every choice.
template <class E>
E parse_named_choice(const std::string& s, const std::string& flag,
                     std::initializer_list<std::pair<const char*, E>> choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (s == name) return value;
    names += std::string(names.empty() ? "" : ", ") + name;
  }
  throw AtlasError(flag + ": unknown choice \"" + s + "\" (choose " + names + ")");
}

// log softmax of a row of n logits, in double (the maximum subtracted first).
inline std::vector<double> log_softmax_row(const float* row, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  const double mx = *std::max_element(row, row + n);
  double z = 0;
  for (int64_t v = 0; v < n; ++v) z += std::exp(double(row[v]) - mx);
  const double lz = mx + std::log(z);
  for (int64_t v = 0; v < n; ++v) out[size_t(v)] = double(row[v]) - lz;
  return out;
}

}  // namespace atlas
