#pragma once
// The Vulkan compute backend: public entry points. No Vulkan headers here, so the CLI and the
// app can include this without the SDK; the loader itself is opened at run time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace atlas {

struct VulkanDeviceInfo {
  int index = 0;            // position in the loader's enumeration, usable as --device N
  std::string name;         // e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;         // discrete | integrated | virtual | cpu | other
  std::string api_version;  // "1.3.230"
  std::string driver;       // "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)" or the raw driver version
};

// Every physical device of the installed drivers. Throws AtlasError with a message naming
// the cause when there is no loader or no device.
std::vector<VulkanDeviceInfo> list_vulkan_devices();

struct VulkanOptions {
  // "" = best device (discrete > integrated > virtual > cpu); a number = that index of
  // list_vulkan_devices(); anything else = case-insensitive substring of the device name.
  std::string device;
  // Enable VK_LAYER_KHRONOS_validation; messages are collected (take_vulkan_validation_messages)
  // and printed to stderr. Throws at creation if the layer is not installed.
  bool validation = false;
  // "" = $XDG_CACHE_HOME/attention-atlas or ~/.cache/attention-atlas.
  std::string pipeline_cache_dir;
  // 0 = the device's maxStorageBufferRange. Tests lower it to exercise the paths that split
  // a dispatch into windows of a large buffer.
  uint64_t max_binding_bytes = 0;
};

// Throws AtlasError (no loader, no device, no device matching options.device, validation
// layer missing, device creation failed).
std::unique_ptr<Backend> make_vulkan_backend(const VulkanOptions& options);

// For `--backend auto`: true when a non-CPU Vulkan device exists. Never throws.
bool vulkan_has_non_cpu_device();

// Validation-layer messages (warnings and errors) gathered since the last call, from every
// Vulkan backend of the process. The gpu_validation test fails on any.
std::vector<std::string> take_vulkan_validation_messages();

// Counters of a Vulkan backend, for tests and `atlas info`. Throws AtlasError if `backend`
// is not a Vulkan backend.
struct VulkanBackendStats {
  std::string device_name;
  uint64_t submissions = 0;
  uint64_t dispatches = 0;
  uint64_t barriers = 0;           // pipeline barriers between dependent commands
  uint64_t buffers_allocated = 0;  // VkBuffers created (pool misses)
  uint64_t buffers_reused = 0;     // pool hits
  uint64_t pipelines_created = 0;
  uint64_t pipeline_cache_bytes_loaded = 0;  // 0 when no valid cache file was found
  std::string pipeline_cache_path;           // the file written when the backend closes
};
VulkanBackendStats vulkan_backend_stats(const Backend& backend);

}  // namespace atlas
