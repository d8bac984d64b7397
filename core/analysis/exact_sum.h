#pragma once
// An exact sum of doubles: every finite double is an integer multiple of 2^-1074 below 2^1024,
// so a 2176-bit two's-complement integer in units of 2^-1074 holds any sum of up to 2^63 of
// them without rounding. Adding is therefore associative and commutative: a corpus split into
// shards, summed per shard and merged, or resumed after a stop, gives the very same sum as one
// pass in any order. value() rounds the exact sum once, to nearest (ties to even), so the sum
// of two doubles equals their IEEE sum a + b.
#include <array>
#include <cstdint>
#include <string>

namespace atlas {

class ExactSum {
 public:
  void add(double x);  // a NaN or infinity makes the sum NaN
  void add(const ExactSum& other);
  double value() const;  // correctly rounded; +-inf beyond the double range
  bool operator==(const ExactSum&) const = default;

  // Canonical text: "0", "nan", or [-]HEXp[-]E meaning HEX * 2^E with HEX an integer written
  // in lower-case hex without leading or trailing zero digits ("3p-1" = 1.5). Equal sums give
  // equal strings, so files written from them compare byte for byte.
  std::string to_string() const;
  // Throws AtlasError naming `origin` unless `text` is the canonical form of a sum.
  static ExactSum parse(const std::string& text, const std::string& origin);

 private:
  static constexpr int kLimbs = 34;  // 2176 bits: 2098 for the range, 63 of carries, a sign
  static constexpr int kUnitExponent = -1074;  // bit 0 is worth 2^-1074
  bool negative() const { return limbs_[kLimbs - 1] >> 63; }
  std::array<uint64_t, kLimbs> magnitude() const;  // two's complement negated when negative

  std::array<uint64_t, kLimbs> limbs_{};  // little-endian limbs
  bool nan_ = false;
};

}  // namespace atlas
