#pragma once
// The generated tables behind core/tokenizers/unicode_nfc.h (scripts/gen_unicode_nfc.py).
#include <cstddef>
#include <cstdint>

namespace atlas::unicode::data {

struct CombiningClassRange {
  char32_t lo, hi;  // inclusive; every code point in no range has class 0
  uint8_t ccc;      // Canonical_Combining_Class
};
struct Composition {
  char32_t first, second;  // sorted by (first, second)
  char32_t composite;      // the primary composite they canonically compose to
};

extern const CombiningClassRange kCombiningClass[];
extern const size_t kCombiningClass_count;
extern const Composition kComposition[];
extern const size_t kComposition_count;

}  // namespace atlas::unicode::data
