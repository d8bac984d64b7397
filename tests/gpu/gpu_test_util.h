#pragma once
// Helpers of the Vulkan backend tests: a backend per test (with validation when
// ATLAS_VULKAN_VALIDATION=1, any message failing the test), seeded random data and the
// element-wise comparison of tests/backend_ops/compare.h.
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
#include "tests/backend_ops/compare.h"

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
  const std::vector<float> v = random_values(t.data.size(), seed, lo, hi);
  t.data.assign(v.begin(), v.end());
  return t;
}

// The comparison helpers are the backend-ops harness's (tests/backend_ops/compare.h).
using op_test::kU;
using op_test::rel_tol;
using op_test::require_close;
using op_test::to_double;

}  // namespace atlas::gpu_test
