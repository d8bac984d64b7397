#pragma once
// The Hangul syllable arithmetic of Unicode (chapter 3.12): a precomposed syllable S is
// SBase + (L * VCount + V) * TCount + T. Used by NFC composition and by the category tables.

namespace atlas::hangul {

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
constexpr char32_t kSCount = kLCount * kNCount;

}  // namespace atlas::hangul
