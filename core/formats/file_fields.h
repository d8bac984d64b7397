#pragma once
// Small readers shared by the binary tensor-file parsers (npy.cpp, safetensors.cpp): fields
// assembled byte by byte, element counts checked for overflow, doubles narrowed to floats, and
// text from the file made printable for messages.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/tensor/tensor.h"

namespace atlas::file_fields {

// Little-endian, byte by byte: independent of host endianness and alignment; compilers fold it
// into a single load on little-endian machines.
inline uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The product of `shape` into `numel`; false when a dimension is negative or the product of
// the nonzero ones overflows int64 (so no later numel_of() on the shape can; a zero dimension
// makes 0 whatever the others are).
inline bool checked_numel(const Shape& shape, uint64_t& numel) {
  int64_t nonzero = 1;
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, d, &nonzero)) return false;
  }
  numel = has_zero ? 0 : static_cast<uint64_t>(nonzero);
  return true;
}

// double -> float with IEEE round-to-nearest, but without the undefined behaviour C++ gives a
// cast of an out-of-range finite value.
inline float narrow_double(double d) {
  const double kRoundsToInf = 0x1.ffffffp127;  // halfway between FLT_MAX and 2^128
  if (std::isfinite(d) && std::fabs(d) > FLT_MAX) {
    float mag = std::fabs(d) >= kRoundsToInf ? std::numeric_limits<float>::infinity() : FLT_MAX;
    return d < 0 ? -mag : mag;
  }
  return static_cast<float>(d);
}

// Text taken from a file goes into messages shown to the user: printable ASCII ('?' for the
// rest), cut at `max_len` characters.
inline std::string printable(std::string_view s, size_t max_len) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max_len) return out + "...";
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  return out;
}

}  // namespace atlas::file_fields
