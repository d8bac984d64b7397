// Value axes of the curve plots (ui/panels/chart_adapter.h): ticks at 1, 2, 2.5 or 5 times a
// power of ten, covering the data, at most 7 ticks, never past what the quantity can take.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "ui/panels/chart_adapter.h"

using atlas::ui::AxisRange;
using atlas::ui::niceAxis;

namespace {

// Whether `step` is 1, 2, 2.5 or 5 times a power of ten.
bool niceStep(double step) {
  const double unit = std::pow(10.0, std::floor(std::log10(step) + 1e-12));
  const double m = step / unit;
  for (double want : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (std::abs(m - want) < 1e-9 * want) return true;
  return false;
}

}  // namespace

TEST_CASE("curve value axes: nice ticks that cover the data within the quantity's bounds", "[ui][axis]") {
  // By hand: 0.57..1.26 -> raw step 0.115 -> 0.2; 0.4 to 1.4, six ticks (not 0.57 0.74 ... 1.26).
  AxisRange r = niceAxis(0.57, 1.26);
  CHECK(r.min == Approx(0.4));
  CHECK(r.max == Approx(1.4));
  CHECK(r.ticks == 6);
  // A loss from 0.01 to 2.3 starting at the floor 0: step 0.5, 0 to 2.5.
  r = niceAxis(0.01, 2.3, 0.0);
  CHECK(r.min == 0.0);
  CHECK(r.max == Approx(2.5));
  CHECK(r.ticks == 6);
  // An accuracy reaching 1 stops at 1.
  r = niceAxis(0.2, 1.0, 0.0, 1.0);
  CHECK(r.min == Approx(0.2));
  CHECK(r.max == 1.0);
  CHECK(r.ticks == 5);
  // One value: a unit around it, inside the bounds.
  r = niceAxis(1.0, 1.0, 0.0, 1.0);
  CHECK(r.min == 0.0);
  CHECK(r.max == 1.0);

  // Data that is not finite (a diverged loss) gives the unit axis, never a hang.
  r = niceAxis(std::nan(""), 1.0, 0.0);
  CHECK(r.min == 0.0);
  CHECK(r.max == 1.0);
  r = niceAxis(0.0, HUGE_VAL);
  CHECK(std::isfinite(r.min));
  CHECK(std::isfinite(r.max));

  std::mt19937 gen(7);
  std::uniform_real_distribution<double> exponent(-4, 4), unit(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double scale = std::pow(10.0, exponent(gen));
    double lo = (unit(gen) - 0.5) * scale, hi = lo + unit(gen) * scale + 1e-9 * scale;
    const bool bounded = i % 2 == 1;  // a probability-like quantity
    if (bounded) lo = unit(gen) * 0.9, hi = std::min(1.0, lo + unit(gen));
    const AxisRange a = bounded ? niceAxis(lo, hi, 0.0, 1.0) : niceAxis(lo, hi);
    INFO(lo << " .. " << hi << " -> " << a.min << " .. " << a.max << " in " << a.ticks << " ticks");
    const double ulps = 1e-12 * std::max(std::abs(lo), std::abs(hi));  // the products' rounding
    CHECK(a.min <= lo + ulps);
    CHECK(a.max >= hi - ulps);
    CHECK(a.ticks >= 2);
    CHECK(a.ticks <= 7);
    if (bounded) {
      CHECK(a.min >= 0.0);
      CHECK(a.max <= 1.0);
    } else {
      CHECK(niceStep((a.max - a.min) / (a.ticks - 1)));
    }
  }
}
