// NFC by the book (UAX #15 section 3.11's algorithm): decompose, order marks, compose.
#include "core/tokenizers/unicode_nfc.h"

#include <algorithm>

#include "core/tokenizers/unicode_categories.h"
#include "core/tokenizers/unicode_nfc_data.h"
#include "core/tokenizers/utf8.h"
#include "core/tokenizers/hangul.h"

namespace atlas {
namespace {

// Hangul syllables compose algorithmically (Unicode 15.0 section 3.12).
using namespace hangul;  // kSBase, kLCount, ... (core/tokenizers/hangul.h)

// The primary composite of (a, b), or 0 when they do not compose.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* end = unicode::data::kComposition + unicode::data::kComposition_count;
  const auto* it = std::lower_bound(
      unicode::data::kComposition, end, std::pair{a, b},
      [](const unicode::data::Composition& c, const std::pair<char32_t, char32_t>& key) {
        return c.first != key.first ? c.first < key.first : c.second < key.second;
      });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

int canonical_combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  const auto* end = unicode::data::kCombiningClass + unicode::data::kCombiningClass_count;
  const auto* it = std::lower_bound(
      unicode::data::kCombiningClass, end, cp,
      [](const unicode::data::CombiningClassRange& r, char32_t c) { return r.hi < c; });
  return it != end && it->lo <= cp ? it->ccc : 0;
}

std::string to_nfc(std::string_view text) {
  // Nothing below U+0300 changes under NFC (the first character that can is U+0300), so most
  // text returns at once.
  bool simple = true;
  for (size_t pos = 0; pos < text.size() && simple;) {
    const uint8_t b = static_cast<uint8_t>(text[pos]);
    if (b < 0x80) {
      ++pos;
      continue;
    }
    const utf8::Decoded d = utf8::decode(text, pos);
    simple = d.length != 0 && d.code_point < 0x300;
    pos += d.length;
  }
  if (simple) return std::string(text);

  std::string out;
  std::u32string run;  // decomposed code points since the last byte copied as it is
  const auto flush = [&] {
    // Canonical ordering: each maximal sequence of non-starters sorted stably by class.
    for (size_t i = 0; i < run.size();) {
      if (canonical_combining_class(run[i]) == 0) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < run.size() && canonical_combining_class(run[j]) != 0) ++j;
      std::stable_sort(run.begin() + i, run.begin() + j, [](char32_t a, char32_t b) {
        return canonical_combining_class(a) < canonical_combining_class(b);
      });
      i = j;
    }
    // Canonical composition: a character joins the last starter unless a character between
    // them blocks it (class 0, or a class not below its own).
    std::u32string composed;
    size_t starter = std::u32string::npos;
    int last_class = 0;
    for (const char32_t c : run) {
      const int cc = canonical_combining_class(c);
      if (starter != std::u32string::npos) {
        const bool adjacent = composed.size() == starter + 1;
        if (adjacent || (last_class != 0 && last_class < cc)) {
          if (const char32_t p = compose(composed[starter], c)) {
            composed[starter] = p;
            continue;
          }
        }
      }
      if (cc == 0) starter = composed.size();
      last_class = cc;
      composed.push_back(c);
    }
    for (const char32_t c : composed) utf8::append(out, c);
    run.clear();
  };
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    if (d.length == 0) {  // not a character: copied, and nothing composes across it
      flush();
      out += text[pos++];
      continue;
    }
    unicode::append_nfd(run, d.code_point);
    pos += d.length;
  }
  flush();
  return out;
}

}  // namespace atlas
