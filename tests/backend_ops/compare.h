#pragma once
// Element-wise comparison against a double-precision expectation with per-element tolerances,
// shared by the backend-ops harness and the hand-written oracle tests (tests/gpu/).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace atlas::op_test {

// The unit roundoff of float32.
constexpr double kU = 1.0 / (1 << 24);

// Passes when every |got[i] - want[i]| <= tol[i]; reports the worst element and the max
// absolute and relative errors either way (shown with -s).
// (got: any float vector: a Tensor's data or a plain std::vector<float>.)
template <class Floats>
void require_close(const Floats& got, const std::vector<double>& want,
                   const std::vector<double>& tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  REQUIRE(tol.size() == want.size());
  size_t bad = 0, worst = 0;
  double worst_ratio = 0, max_abs = 0, max_rel = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    double err;
    if (std::isinf(w) || std::isinf(g))
      err = (g == w) ? 0.0 : INFINITY;
    else
      err = std::fabs(g - w);
    if (std::isnan(g) || std::isnan(w)) err = INFINITY;
    max_abs = std::max(max_abs, err);
    if (std::fabs(w) > 1e-3) max_rel = std::max(max_rel, err / std::fabs(w));
    const double ratio = tol[i] > 0 ? err / tol[i] : (err > 0 ? INFINITY : 0.0);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
    if (err > tol[i]) ++bad;
  }
  INFO(what << ": " << bad << " of " << got.size() << " beyond tolerance; max abs err "
            << max_abs << ", max rel err (|want| > 1e-3) " << max_rel << "; worst at " << worst
            << ": got " << (got.empty() ? 0.0 : got[worst]) << " want "
            << (want.empty() ? 0.0 : want[worst]) << " tol "
            << (tol.empty() ? 0.0 : tol[worst]));
  CHECK(bad == 0);
  if (std::getenv("ATLAS_TEST_ERRORS"))  // prints the measured errors, for the docs
    std::printf("%-45s n=%-9zu max abs %.3g  max rel %.3g  worst err/tol %.3g\n", what.c_str(),
                got.size(), max_abs, max_rel, worst_ratio);
}

template <class Floats>
void require_close(const Floats& got, const std::vector<double>& want, double abs_tol,
                   const std::string& what) {
  require_close(got, want, std::vector<double>(want.size(), abs_tol), what);
}

// Per-element tolerance abs + rel |want| (abs alone where want is infinite: masked scores).
inline std::vector<double> rel_tol(const std::vector<double>& want, double abs, double rel) {
  std::vector<double> t(want.size());
  for (size_t i = 0; i < want.size(); ++i) t[i] = abs + (std::isinf(want[i]) ? 0.0 : rel * std::fabs(want[i]));
  return t;
}

template <class Floats>  // a Tensor's data or a plain std::vector<float>
std::vector<double> to_double(const Floats& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace atlas::op_test
