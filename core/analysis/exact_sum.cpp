// Exact sums of doubles (exact_sum.h).
#include "core/analysis/exact_sum.h"

#include <cmath>
#include <limits>

#include "core/tensor/error.h"

namespace atlas {

namespace {

using Limbs = std::array<uint64_t, 34>;

// `words` (two 64-bit words, low first) added to or subtracted from `limbs` at limb `at`, the
// carry or borrow run up to the top limb and dropped there (two's-complement arithmetic).
void add_at(Limbs& limbs, int at, const uint64_t words[2], bool subtract) {
  uint64_t carry = 0;
  for (int k = at; k < int(limbs.size()); ++k) {
    const uint64_t v = k - at < 2 ? words[k - at] : 0;
    if (k - at >= 2 && carry == 0) break;
    const uint64_t a = limbs[size_t(k)];
    if (subtract) {
      limbs[size_t(k)] = a - v - carry;
      carry = (a < v || a - v < carry) ? 1 : 0;
    } else {
      const unsigned __int128 s = static_cast<unsigned __int128>(a) + v + carry;
      limbs[size_t(k)] = static_cast<uint64_t>(s);
      carry = static_cast<uint64_t>(s >> 64);
    }
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

void ExactSum::add(double x) {
  if (x == 0) return;
  if (!std::isfinite(x)) {
    nan_ = true;
    return;
  }
  int e = 0;
  const double m = std::frexp(std::fabs(x), &e);             // |x| = m 2^e, m in [0.5, 1)
  auto mantissa = static_cast<uint64_t>(std::ldexp(m, 53));  // exact: 53 bits
  int64_t bit = int64_t(e) - 53 - kUnitExponent;             // the mantissa's lowest bit, in units
  if (bit < 0) {  // a subnormal: the bits shifted out are zeros
    mantissa >>= -bit;
    bit = 0;
  }
  const int shift = int(bit % 64);
  const uint64_t words[2] = {mantissa << shift, shift ? mantissa >> (64 - shift) : 0};
  add_at(limbs_, int(bit / 64), words, x < 0);
}

void ExactSum::add(const ExactSum& other) {
  nan_ = nan_ || other.nan_;
  uint64_t carry = 0;
  for (int k = 0; k < kLimbs; ++k) {
    const unsigned __int128 s =
        static_cast<unsigned __int128>(limbs_[size_t(k)]) + other.limbs_[size_t(k)] + carry;
    limbs_[size_t(k)] = static_cast<uint64_t>(s);
    carry = static_cast<uint64_t>(s >> 64);
  }
}

std::array<uint64_t, ExactSum::kLimbs> ExactSum::magnitude() const {
  Limbs m = limbs_;
  if (!negative()) return m;
  for (auto& w : m) w = ~w;
  const uint64_t one[2] = {1, 0};
  add_at(m, 0, one, false);
  return m;
}

double ExactSum::value() const {
  if (nan_) return std::numeric_limits<double>::quiet_NaN();
  const Limbs mag = magnitude();
  int64_t top = -1;  // the highest set bit
  for (int k = kLimbs - 1; k >= 0 && top < 0; --k)
    if (mag[size_t(k)]) top = int64_t(k) * 64 + 63 - __builtin_clzll(mag[size_t(k)]);
  if (top < 0) return 0.0;
  auto bit = [&](int64_t i) { return (mag[size_t(i / 64)] >> (i % 64)) & 1; };
  double r;
  if (top <= 52) {
    r = std::ldexp(double(mag[0]), kUnitExponent);  // 53 bits at 2^-1074: representable
  } else {
    uint64_t mantissa = 0;
    for (int64_t i = top; i >= top - 52; --i) mantissa = mantissa << 1 | bit(i);
    const bool half = bit(top - 53);
    bool sticky = false;
    for (int64_t i = top - 54; i >= 0 && !sticky; --i) sticky = bit(i);
    if (half && (sticky || (mantissa & 1))) ++mantissa;               // to nearest, ties to even
    r = std::ldexp(double(mantissa), int(top - 52 + kUnitExponent));  // 2^53 is exact too
  }
  return negative() ? -r : r;
}

std::string ExactSum::to_string() const {
  if (nan_) return "nan";
  static const char* kDigits = "0123456789abcdef";
  const Limbs mag = magnitude();
  std::string hex;
  for (int k = kLimbs - 1; k >= 0; --k)
    for (int d = 15; d >= 0; --d) hex += kDigits[(mag[size_t(k)] >> (4 * d)) & 0xF];
  const size_t first = hex.find_first_not_of('0');
  if (first == std::string::npos) return "0";
  const size_t last = hex.find_last_not_of('0');
  const int64_t trailing = int64_t(hex.size() - 1 - last);
  return (negative() ? "-" : "") + hex.substr(first, last - first + 1) + "p" +
         std::to_string(4 * trailing + kUnitExponent);
}

ExactSum ExactSum::parse(const std::string& text, const std::string& origin) {
  auto fail = [&](const char* why) -> ExactSum {
    throw AtlasError(origin + ": \"" + text.substr(0, 80) + "\" is not an exact sum (" + why + ")");
  };
  ExactSum s;
  if (text == "0") return s;
  if (text == "nan") {
    s.nan_ = true;
    return s;
  }
  const bool negative = !text.empty() && text[0] == '-';
  const size_t p = text.find('p');
  if (p == std::string::npos) return fail("no 'p' before the exponent");
  const std::string digits = text.substr(negative ? 1 : 0, p - (negative ? 1 : 0));
  const std::string exponent = text.substr(p + 1);
  if (digits.empty() || digits.front() == '0' || digits.back() == '0')
    return fail("the hex digits must start and end with a non-zero digit");
  for (char c : digits)
    if (hex_value(c) < 0) return fail("a character that is no lower-case hex digit");
  const size_t exp_digits = exponent.find_first_not_of('-') == 1 ? 1 : 0;
  if (exponent.size() <= exp_digits || exponent.size() > 6 + exp_digits ||
      exponent.find_first_not_of("0123456789", exp_digits) != std::string::npos ||
      exponent[exp_digits] == '0')
    return fail("the exponent is not a small integer");
  const int64_t e = std::stoll(exponent);
  if (e < kUnitExponent || (e - kUnitExponent) % 4 != 0)
    return fail("the exponent is below -1074 or not -1074 plus a multiple of 4");
  const int64_t trailing = (e - kUnitExponent) / 4;  // hex zeros after the digits
  const int64_t total = int64_t(digits.size()) + trailing;
  if (total > kLimbs * 16 || (total == kLimbs * 16 && hex_value(digits[0]) >= 8))
    return fail("larger than any sum of doubles");
  for (size_t i = 0; i < digits.size(); ++i) {
    const int64_t place = trailing + int64_t(digits.size() - 1 - i);  // hex digit index from bit 0
    s.limbs_[size_t(place / 16)] |= uint64_t(hex_value(digits[i])) << (4 * (place % 16));
  }
  if (negative) {
    for (auto& w : s.limbs_) w = ~w;
    const uint64_t one[2] = {1, 0};
    add_at(s.limbs_, 0, one, false);
  }
  return s;
}

}  // namespace atlas
