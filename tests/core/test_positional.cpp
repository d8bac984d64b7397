#include <catch2/catch.hpp>

#include <cmath>

#include "core/model/positional.h"

using namespace atlas;

// Hand-picked values of seed 000's formula PE(p, 2i) = sin(p / 10000^(2i/d)),
// PE(p, 2i+1) = cos(p / 10000^(2i/d)), here with d = 4: frequencies 1 and 1/100.
TEST_CASE("interleaved sinusoid matches the paper formula at chosen positions", "[positional]") {
  Tensor pe = sinusoid_table(3, 4, SinusoidLayout::Interleaved);
  REQUIRE(pe.shape == Shape{3, 4});
  CHECK(pe.data[0] == 0.0f);                               // sin(0)
  CHECK(pe.data[1] == 1.0f);                               // cos(0)
  CHECK(pe.data[4 + 0] == Approx(0.8414709848));           // sin(1)
  CHECK(pe.data[4 + 1] == Approx(0.5403023059));           // cos(1)
  CHECK(pe.data[8 + 2] == Approx(0.0199986667).epsilon(1e-6));  // sin(2 / 100)
  CHECK(pe.data[8 + 3] == Approx(0.9998000067));           // cos(2 / 100)
}

TEST_CASE("concatenated sinusoid puts every sine before every cosine", "[positional]") {
  Tensor pe = sinusoid_table(3, 4, SinusoidLayout::Concatenated);
  CHECK(pe.data[8 + 0] == Approx(0.9092974268));  // sin(2)
  CHECK(pe.data[8 + 1] == Approx(0.0199986667));  // sin(2/100)
  CHECK(pe.data[8 + 2] == Approx(-0.4161468365)); // cos(2)
  CHECK(pe.data[8 + 3] == Approx(0.9998000067));  // cos(2/100)
}

TEST_CASE("sinusoid rows start at the given first position", "[positional]") {
  Tensor pe = sinusoid_table(1, 2, SinusoidLayout::Interleaved, 1000);
  CHECK(pe.data[0] == Approx(std::sin(1000.0)).margin(1e-6));
  CHECK(pe.data[1] == Approx(std::cos(1000.0)).margin(1e-6));
}
