#pragma once
// Helpers of the Vulkan backend tests: a backend per test (with validation when
// ATLAS_VULKAN_VALIDATION=1, any message failing the test), seeded random data and an
// element-wise comparison against an independent double-precision oracle.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/error.h"
#include "core/tensor/tensor.h"
#include "gpu/vulkan_backend.h"

namespace atlas::gpu_test {

inline bool validation_requested() {
  const char* e = std::getenv("ATLAS_VULKAN_VALIDATION");
  return e && *e && std::string(e) != "0";
}

// A private pipeline-cache folder per test process, removed at exit.
inline std::string cache_dir() {
  struct Dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("atlas_gpu_test_cache_" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path.string();
}

inline VulkanOptions options() {
  VulkanOptions o;
  o.validation = validation_requested();
  o.pipeline_cache_dir = cache_dir();
  return o;
}

// Owns a Vulkan backend and the CPU reference. On destruction the Vulkan backend is closed
// first (so messages from destroying objects count too), then no validation message may
// have appeared during the test.
struct Gpu {
  std::unique_ptr<Backend> vk;
  std::unique_ptr<Backend> cpu = make_cpu_backend();

  explicit Gpu(const VulkanOptions& o = options()) {
    take_vulkan_validation_messages();  // messages of earlier tests were already reported
    vk = make_vulkan_backend(o);
  }
  ~Gpu() {
    vk.reset();
    const std::vector<std::string> msgs = take_vulkan_validation_messages();
    if (std::uncaught_exceptions() == 0) {
      std::string all;
      for (const auto& m : msgs) all += m + "\n";
      INFO("Vulkan validation messages:\n" << all);
      CHECK(msgs.empty());
    }
  }
};

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline Tensor random_tensor(Shape shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(shape);
  t.data = random_values(t.data.size(), seed, lo, hi);
  return t;
}

// The unit roundoff of float32.
constexpr double kU = 1.0 / (1 << 24);

// Passes when every |got[i] - want[i]| <= tol[i]; reports the worst element and the max
// absolute and relative errors either way (shown with -s).
inline void require_close(const std::vector<float>& got, const std::vector<double>& want,
                          const std::vector<double>& tol, const std::string& what) {
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

inline void require_close(const std::vector<float>& got, const std::vector<double>& want,
                          double abs_tol, const std::string& what) {
  require_close(got, want, std::vector<double>(want.size(), abs_tol), what);
}

// Per-element tolerance abs + rel |want| (abs alone where want is infinite: masked scores).
inline std::vector<double> rel_tol(const std::vector<double>& want, double abs, double rel) {
  std::vector<double> t(want.size());
  for (size_t i = 0; i < want.size(); ++i) t[i] = abs + (std::isinf(want[i]) ? 0.0 : rel * std::fabs(want[i]));
  return t;
}

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

}  // namespace atlas::gpu_test
