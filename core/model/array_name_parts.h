#pragma once
// Reading trace array names of the dump scheme ("decoder.seg2.layer1.self_attn",
// "decoder.seg0.layer3.attn.gate.z"): the dot-separated parts and the number after a part's
// prefix. Shared by the catalogue's reading of old dumps (attention_map.cpp) and the GTrXL gate
// names (core/variants/gtrxl/gate_arrays.cpp).
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

inline std::vector<std::string> dotted_parts(const std::string& name) {
  std::vector<std::string> parts;
  for (size_t b = 0;;) {
    const size_t e = name.find('.', b);
    parts.push_back(name.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return parts;
    b = e + 1;
  }
}

// 12 for ("seg12", "seg"); nothing unless the rest of `part` is digits (at most 10 of them).
inline std::optional<int64_t> number_after(const std::string& part, const std::string& prefix) {
  const size_t n = prefix.size();
  if (part.size() <= n || part.compare(0, n, prefix) != 0) return std::nullopt;
  int64_t v = 0;
  for (size_t i = n; i < part.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(part[i])) || v > 1000000000) return std::nullopt;
    v = v * 10 + (part[i] - '0');
  }
  return v;
}

}  // namespace atlas
