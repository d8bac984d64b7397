#pragma once
// The generated tables behind core/tokenizers/unicode_categories.h (scripts/gen_unicode_categories.py).
#include <cstddef>
#include <cstdint>

namespace atlas::unicode::data {

struct CodePointRange {
  char32_t lo, hi;  // inclusive
};
struct CaseMapping {
  char32_t from, to;
};
struct Decomposition {
  char32_t code_point;
  uint16_t offset;  // into kDecompositionPool
  uint8_t length;
};

extern const CodePointRange kLetter[], kNumber[], kPunctuation[], kNonspacingMark[],
    kSpaceSeparator[], kOther[];
extern const size_t kLetter_count, kNumber_count, kPunctuation_count, kNonspacingMark_count,
    kSpaceSeparator_count, kOther_count;
extern const CaseMapping kLowercase[];
extern const size_t kLowercase_count;
extern const char32_t kDecompositionPool[];
extern const Decomposition kDecomposition[];
extern const size_t kDecomposition_count;

}  // namespace atlas::unicode::data
