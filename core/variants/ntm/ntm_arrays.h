#pragma once
// The trace arrays of a Neural Turing Machine run (docs/variants.md, "Neural Turing Machine"),
// named once for the producer (ntm.cpp) and every reader (the NTM explorer, tests).
#include <cstdint>
#include <string>

namespace atlas::ntm_arrays {

inline constexpr const char* kMemory = "ntm.memory";  // before step 0 and after every step [T+1, N, M]

// Per head ("read0", "write0", ...): `ntm.<head>.<what>`, what one of weights [T, N], key [T, M],
// beta, gate, gamma [T], shift [T, 2R+1], erase, add (write heads) or reads (read heads) [T, M].
inline std::string head_array(const std::string& head, const std::string& what) {
  return "ntm." + head + "." + what;
}
// The head whose weights `name` holds (`ntm.<head>.weights`), or "" for any other name.
inline std::string head_of_weights(const std::string& name) {
  const std::string prefix = "ntm.", suffix = ".weights";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
}
// The addressing stages of one step and head: `ntm.step<t>.<head>.<stage>`, stage one of
// content, gated, shifted, sharpened [N].
inline std::string step_array(int64_t step, const std::string& head, const std::string& stage) {
  return "ntm.step" + std::to_string(step) + "." + head + "." + stage;
}

}  // namespace atlas::ntm_arrays
