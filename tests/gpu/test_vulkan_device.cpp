// Device enumeration and selection, the pipeline cache file, and error messages.
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

TEST_CASE("list_vulkan_devices describes every device", "[gpu][device]") {
  const auto devs = list_vulkan_devices();
  REQUIRE(!devs.empty());
  const std::set<std::string> types = {"discrete", "integrated", "virtual", "cpu", "other"};
  bool non_cpu = false;
  for (size_t i = 0; i < devs.size(); ++i) {
    CAPTURE(i, devs[i].name);
    CHECK(devs[i].index == static_cast<int>(i));
    CHECK(!devs[i].name.empty());
    CHECK(types.count(devs[i].type) == 1);
    CHECK(std::count(devs[i].api_version.begin(), devs[i].api_version.end(), '.') == 2);
    CHECK(!devs[i].driver.empty());
    non_cpu = non_cpu || devs[i].type != "cpu";
  }
  CHECK(vulkan_has_non_cpu_device() == non_cpu);
}

TEST_CASE("the default device is the best type; index and name select others", "[gpu][device]") {
  const auto devs = list_vulkan_devices();
  auto rank = [](const std::string& t) {
    return t == "discrete" ? 0 : t == "integrated" ? 1 : t == "virtual" ? 2 : t == "cpu" ? 3 : 4;
  };
  int best = 4;
  for (const auto& d : devs) best = std::min(best, rank(d.type));
  {
    Gpu g;
    const std::string chosen = vulkan_backend_stats(*g.vk).device_name;
    bool found = false;
    for (const auto& d : devs)
      if (d.name == chosen) found = found || rank(d.type) == best;
    CHECK(found);
    CHECK_THAT(g.vk->name(), Catch::Contains("vulkan") && Catch::Contains(chosen));
  }
  const auto& last = devs.back();
  {
    VulkanOptions o = options();
    o.device = std::to_string(last.index);
    Gpu g(o);
    CHECK(vulkan_backend_stats(*g.vk).device_name == last.name);
  }
  {
    // Case-insensitive substring of the name.
    std::string part = last.name.substr(0, std::min<size_t>(5, last.name.size()));
    for (char& c : part) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    VulkanOptions o = options();
    o.device = part;
    Gpu g(o);
    CHECK(vulkan_backend_stats(*g.vk).device_name.substr(0, 5) == last.name.substr(0, 5));
  }
}

TEST_CASE("a device name or index that matches nothing is a clear error", "[gpu][device]") {
  VulkanOptions o = options();
  o.device = "no-such-gpu-xyz";
  CHECK_THROWS_WITH(make_vulkan_backend(o),
                    Catch::Contains("no-such-gpu-xyz") && Catch::Contains("available"));
  o.device = "99";
  CHECK_THROWS_WITH(make_vulkan_backend(o), Catch::Contains("99") && Catch::Contains("available"));
}

TEST_CASE("the pipeline cache is written per device and loaded by the next backend",
          "[gpu][device]") {
  const std::filesystem::path dir = std::filesystem::path(cache_dir()) / "pc_test";
  std::filesystem::remove_all(dir);
  VulkanOptions o = options();
  o.pipeline_cache_dir = dir.string();
  std::string path;
  {
    Gpu g(o);
    const auto s = vulkan_backend_stats(*g.vk);
    CHECK(s.pipeline_cache_bytes_loaded == 0);
    path = s.pipeline_cache_path;
    g.vk->download(g.vk->scale(g.vk->upload(random_tensor({8}, 1)), 2.0f));
    CHECK(vulkan_backend_stats(*g.vk).pipelines_created == 1);  // created lazily, only scale
  }
  REQUIRE(std::filesystem::path(path).parent_path() == dir);
  CHECK_THAT(std::filesystem::path(path).filename().string(), Catch::StartsWith("pipelines-"));
  REQUIRE(std::filesystem::exists(path));
  std::ifstream in(path, std::ios::binary);
  std::vector<char> blob((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(blob.size() >= 32);
  uint32_t header_len = 0, version = 0;
  std::memcpy(&header_len, blob.data(), 4);
  std::memcpy(&version, blob.data() + 4, 4);
  CHECK(header_len >= 32);
  CHECK(version == 1);  // VK_PIPELINE_CACHE_HEADER_VERSION_ONE
  {
    Gpu g(o);
    CHECK(vulkan_backend_stats(*g.vk).pipeline_cache_bytes_loaded == blob.size());
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "not a pipeline cache at all, just text";
  }
  {
    Gpu g(o);  // a corrupt cache is ignored, not fatal
    CHECK(vulkan_backend_stats(*g.vk).pipeline_cache_bytes_loaded == 0);
    const Tensor t = g.vk->download(g.vk->scale(g.vk->upload(Tensor({2}, 1.5f)), 2.0f));
    CHECK(t.data == std::vector<float>{3.0f, 3.0f});
  }
}

TEST_CASE("vulkan_backend_stats refuses a non-Vulkan backend", "[gpu][device]") {
  auto cpu = make_cpu_backend();
  CHECK_THROWS_WITH(vulkan_backend_stats(*cpu), Catch::Contains("not a Vulkan backend"));
}

namespace {

// Points the Vulkan loader at no driver for the lifetime of the object.
struct NoDrivers {
  std::string saved[2];
  bool had[2] = {false, false};
  const char* names[2] = {"VK_DRIVER_FILES", "VK_ICD_FILENAMES"};
  NoDrivers() {
    for (int i = 0; i < 2; ++i) {
      if (const char* v = std::getenv(names[i])) {
        had[i] = true;
        saved[i] = v;
      }
      ::setenv(names[i], "/nonexistent/atlas-no-driver.json", 1);
    }
  }
  ~NoDrivers() {
    for (int i = 0; i < 2; ++i) {
      if (had[i])
        ::setenv(names[i], saved[i].c_str(), 1);
      else
        ::unsetenv(names[i]);
    }
    take_vulkan_validation_messages();  // the loader's own "no driver" report is expected
  }
};

}  // namespace

TEST_CASE("a machine without a Vulkan driver gets a clear error and auto picks the CPU",
          "[gpu][device]") {
  NoDrivers none;
  CHECK_THROWS_WITH(list_vulkan_devices(), Catch::Contains("CPU backend"));
  CHECK_FALSE(vulkan_has_non_cpu_device());
  CHECK_THROWS_AS(make_vulkan_backend(options()), AtlasError);
}
