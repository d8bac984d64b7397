#include <cstdio>

#include "app/cli/commands.h"
#include "core/model/attention_on_demand.h"
#include "core/tensor/error.h"
#ifdef ATLAS_HAVE_VULKAN
#include "gpu/vulkan_backend.h"
#endif

namespace atlas::cli {

bool wants_help(const std::vector<std::string>& args, const char* usage) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return true;
    }
  return false;
}

std::unique_ptr<Backend> choose_backend(const std::string& backend, const std::string& device) {
  if (backend == "cpu") return nullptr;
  if (backend != "vulkan" && backend != "auto")
    throw AtlasError("--backend must be cpu, vulkan or auto, got \"" + printable(backend) + "\"");
#ifdef ATLAS_HAVE_VULKAN
  if (backend == "auto" && device.empty() && !vulkan_has_non_cpu_device()) return nullptr;
  VulkanOptions options;
  options.device = device;
#ifndef NDEBUG
  options.validation = true;  // debug builds run with the Khronos validation layer
#endif
  if (backend == "vulkan") return make_vulkan_backend(options);
  try {
    return make_vulkan_backend(options);
  } catch (const AtlasError& e) {
    std::fprintf(stderr, "atlas: Vulkan unavailable (%s); using the CPU backend\n", e.what());
    return nullptr;
  }
#else
  if (backend == "vulkan")
    throw AtlasError("this build has no Vulkan backend (configured with ATLAS_VULKAN=OFF)");
  (void)device;
  return nullptr;
#endif
}

int cmd_devices(const std::vector<std::string>& args) {
  if (wants_help(args, "usage: atlas devices\n  Lists the Vulkan compute devices, best first.\n"))
    return 0;
  Args parsed(args, {});
#ifdef ATLAS_HAVE_VULKAN
  for (const auto& d : list_vulkan_devices())
    std::printf("%d\t%s\t%s\tVulkan %s\t%s\n", d.index, d.name.c_str(), d.type.c_str(),
                d.api_version.c_str(), d.driver.c_str());
  return 0;
#else
  throw AtlasError("this build has no Vulkan backend (configured with ATLAS_VULKAN=OFF)");
#endif
}

MapStorage map_storage_arg(const std::optional<std::string>& value, const ModelConfig& config) {
  if (!value || *value == "auto") return MapStorage::Auto;
  if (*value == "stored") return MapStorage::Stored;
  if (*value == "on-demand") {
    if (!on_demand_maps_apply(config))
      std::fprintf(stderr, "warning: --maps on-demand computes full softmax attention on request; %s's "
                           "attention (sparse, LSH, Performer, relative positions, spans, score functions, "
                           "XL or a recurrent model) keeps its own storage\n",
                   config.name.c_str());
    return MapStorage::OnDemand;
  }
  throw AtlasError("--maps '" + *value + "' is not one of auto, stored, on-demand");
}

}  // namespace atlas::cli
