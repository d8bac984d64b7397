// Lookups into the generated tables: binary search over sorted, disjoint ranges.
#include "core/tokenizers/unicode_categories.h"

#include <algorithm>

#include "core/tokenizers/unicode_categories_data.h"
#include "core/tokenizers/hangul.h"

namespace atlas::unicode {
namespace {

using data::CodePointRange;

bool in_ranges(const CodePointRange* table, size_t count, char32_t cp) {
  const CodePointRange* end = table + count;
  // First range whose upper end is >= cp; cp is in it when its lower end is <= cp.
  const CodePointRange* it = std::lower_bound(
      table, end, cp, [](const CodePointRange& r, char32_t c) { return r.hi < c; });
  return it != end && it->lo <= cp;
}

// Hangul syllables decompose algorithmically (Unicode 15.0 section 3.12).
using namespace hangul;  // kSBase, kLCount, ... (core/tokenizers/hangul.h)

}  // namespace

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(data::kLetter, data::kLetter_count, cp);
}
bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(data::kNumber, data::kNumber_count, cp);
}
bool is_punctuation(char32_t cp) {
  return in_ranges(data::kPunctuation, data::kPunctuation_count, cp);
}
bool is_nonspacing_mark(char32_t cp) {
  return cp >= 0x300 && in_ranges(data::kNonspacingMark, data::kNonspacingMark_count, cp);
}
bool is_space_separator(char32_t cp) {
  return in_ranges(data::kSpaceSeparator, data::kSpaceSeparator_count, cp);
}
bool is_other(char32_t cp) { return in_ranges(data::kOther, data::kOther_count, cp); }

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  const auto* end = data::kLowercase + data::kLowercase_count;
  const auto* it =
      std::lower_bound(data::kLowercase, end, cp,
                       [](const data::CaseMapping& m, char32_t c) { return m.from < c; });
  return it != end && it->from == cp ? it->to : cp;
}

void append_nfd(std::u32string& out, char32_t cp) {
  if (cp < 0xC0) {  // nothing below U+00C0 decomposes
    out.push_back(cp);
    return;
  }
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* end = data::kDecomposition + data::kDecomposition_count;
  const auto* it =
      std::lower_bound(data::kDecomposition, end, cp,
                       [](const data::Decomposition& d, char32_t c) { return d.code_point < c; });
  if (it == end || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  out.append(data::kDecompositionPool + it->offset, it->length);
}

}  // namespace atlas::unicode
