#pragma once
// A transparent hash for std::unordered_map<std::string, ...>: lookups by std::string_view
// without building a std::string (with std::equal_to<> as the key-equal).
#include <cstddef>
#include <functional>
#include <string_view>

namespace atlas {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace atlas
