#pragma once
// Reading trace array names of the dump scheme ("decoder.seg2.layer1.self_attn",
// "decoder.seg0.layer3.attn.gate.z"): the dot-separated parts and the number after a part's
// prefix. Shared by the catalogue's reading of old dumps (attention_map.cpp), the GTrXL gate
// names (core/variants/gtrxl/gate_arrays.cpp) and the variants that seed a layer by its index.
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

// The layer index in a dump-scheme prefix "<stack>.layer<i>.<what>" (0 when absent): which
// layer's pattern, hash rotations or random features a sub-layer uses (sparse, LSH, Performer).
inline int64_t layer_index_of(const std::string& prefix) {
  const auto at = prefix.find(".layer");
  size_t pos = at == std::string::npos ? (prefix.rfind("layer", 0) == 0 ? 5 : std::string::npos)
                                       : at + 6;
  if (pos == std::string::npos) return 0;
  int64_t n = 0;
  bool any = false;
  while (pos < prefix.size() && prefix[pos] >= '0' && prefix[pos] <= '9') {
    n = n * 10 + (prefix[pos++] - '0');
    any = true;
  }
  return any ? n : 0;
}

}  // namespace atlas
