#pragma once
// Checked int64 arithmetic for sizes and coordinates a user controls (tile corners times a zoom,
// lengths times widths, ...). Signed overflow is undefined behaviour in C++ and in practice wraps
// to a small or negative number that then indexes memory or silently selects the wrong data, so
// every product or sum of user numbers goes through these and fails with a message naming both
// quantities: "--tile row 9223372036854775807 times --zoom 4 is out of range".
#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor/error.h"

namespace atlas {

namespace checked_math_detail {
[[noreturn]] inline void out_of_range(std::string_view a_name, int64_t a, const char* op,
                                      std::string_view b_name, int64_t b) {
  std::string m;
  m.append(a_name).append(" ").append(std::to_string(a)).append(op);
  m.append(b_name).append(" ").append(std::to_string(b));
  m.append(" is out of range (the result would exceed 64-bit integers)");
  throw AtlasError(m);
}
}  // namespace checked_math_detail

// a + b; throws AtlasError("<a_name> <a> plus <b_name> <b> is out of range ...") on overflow.
inline int64_t checked_add(int64_t a, int64_t b, std::string_view a_name, std::string_view b_name) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) checked_math_detail::out_of_range(a_name, a, " plus ", b_name, b);
  return r;
}

// a * b; throws AtlasError("<a_name> <a> times <b_name> <b> is out of range ...") on overflow.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view a_name, std::string_view b_name) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) checked_math_detail::out_of_range(a_name, a, " times ", b_name, b);
  return r;
}

}  // namespace atlas
