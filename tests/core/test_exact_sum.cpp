// Exact sums (core/analysis/exact_sum.h): the sum of two doubles rounds to their IEEE sum
// (one correctly rounded addition, the oracle), any order of the same values gives the same
// sum, and the text form is canonical and read back exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/analysis/exact_sum.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"

using namespace atlas;

namespace {

// Doubles across the whole range: subnormals, tiny, ordinary, huge, both signs.
double any_double(Rng& rng) {
  const double m = rng.uniform() + 0.5;
  const int e = int(rng.next() % 2097) - 1075;  // finite: at most 1.5 * 2^1021
  const double x = std::ldexp(m, e);
  return rng.next() % 2 ? -x : x;
}

ExactSum sum_of(const std::vector<double>& xs) {
  ExactSum s;
  for (double x : xs) s.add(x);
  return s;
}

}  // namespace

TEST_CASE("the exact sum of two doubles is their IEEE sum", "[corpus][exact-sum]") {
  Rng rng(1);
  for (int i = 0; i < 20000; ++i) {
    double a = any_double(rng), b = any_double(rng);
    if (i % 3 == 0) b = -a * (1 + std::ldexp(rng.uniform(), -40));  // near cancellation
    if (i % 7 == 0) b = std::ldexp(a, -int(rng.next() % 60));       // overlapping mantissas
    const double ieee = a + b;
    if (!std::isfinite(ieee)) continue;
    const ExactSum s = sum_of({a, b});
    INFO(a << " + " << b);
    CHECK(s.value() == ieee);
  }
  CHECK(sum_of({0.1, 0.2}).value() == 0.1 + 0.2);  // a tie, rounded to even
  CHECK(
      sum_of({std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::denorm_min()})
          .value() == 2 * std::numeric_limits<double>::denorm_min());
}

TEST_CASE("an exact sum does not depend on the order of its terms", "[corpus][exact-sum]") {
  Rng rng(2);
  std::vector<double> xs;
  for (int i = 0; i < 500; ++i) xs.push_back(i % 4 ? rng.uniform() * 10 : any_double(rng));
  const ExactSum forward = sum_of(xs);
  std::reverse(xs.begin(), xs.end());
  CHECK(sum_of(xs) == forward);
  // Split in three and merged: the shards of a corpus.
  ExactSum a = sum_of({xs.begin(), xs.begin() + 100}),
           b = sum_of({xs.begin() + 100, xs.begin() + 333}),
           c = sum_of({xs.begin() + 333, xs.end()});
  c.add(a);
  c.add(b);
  CHECK(c == forward);
  CHECK(c.to_string() == forward.to_string());
}

TEST_CASE("an exact sum keeps what a double sum loses", "[corpus][exact-sum]") {
  CHECK(sum_of({1e300, 1.0, -1e300}).value() == 1.0);
  CHECK(sum_of({1.0, 1e-300, -1.0}).value() == 1e-300);
  ExactSum n;
  for (int i = 1; i <= 1000; ++i) n.add(double(i));
  CHECK(n.value() == 500500.0);
  CHECK(sum_of({0.5, -0.5}).value() == 0.0);
  CHECK(std::isnan(sum_of({1.0, std::numeric_limits<double>::infinity()}).value()));
  CHECK(std::isnan(sum_of({std::nan("")}).value()));
  const double big = std::numeric_limits<double>::max();
  CHECK(sum_of({big, big}).value() == std::numeric_limits<double>::infinity());
  CHECK(sum_of({-big, -big, big}).value() == -big);
}

TEST_CASE("an exact sum's text is canonical and reads back exactly", "[corpus][exact-sum]") {
  CHECK(sum_of({1.5}).to_string() == "6p-2");
  CHECK(sum_of({-3.0}).to_string() ==
        "-cp-2");  // hex digits stand at multiples of 4 bits from 2^-1074
  CHECK(ExactSum().to_string() == "0");
  CHECK(sum_of({std::nan("")}).to_string() == "nan");
  CHECK(sum_of({std::numeric_limits<double>::denorm_min()}).to_string() == "1p-1074");
  Rng rng(3);
  for (int i = 0; i < 300; ++i) {
    std::vector<double> xs;
    for (int k = 0; k < 1 + i % 5; ++k) xs.push_back(any_double(rng));
    const ExactSum s = sum_of(xs);
    const ExactSum back = ExactSum::parse(s.to_string(), "test");
    CHECK(back == s);
    CHECK(back.to_string() == s.to_string());
  }
  for (const char* bad : {"", "p0", "06p-2", "60p-6", "6p-3", "6P-2", "6p", "6p-02", "+6p-2", "xp0",
                          "6p-2000", "--6p-2"})
    CHECK_THROWS_AS(ExactSum::parse(bad, "test"), AtlasError);
  CHECK_THROWS_AS(ExactSum::parse(std::string(544, 'f') + "p-1074", "test"),
                  AtlasError);  // beyond 2^2175
}
