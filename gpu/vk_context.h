#pragma once
// One Vulkan instance + logical device + compute queue, and the memory pool of the backend.
// Shared (shared_ptr) by everything that owns a Vulkan object, so the device outlives the
// last tensor handle that points into it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/vk_api.h"
#include "gpu/vulkan_backend.h"

namespace atlas::vk {

enum class BufferKind {
  Device,    // storage buffer, device-local when such memory exists
  Staging,   // host-visible source of uploads
  Readback,  // host-visible destination of downloads
};

struct GpuBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;  // bytes allocated (>= bytes asked)
  BufferKind kind = BufferKind::Device;
  void* mapped = nullptr;  // host-visible kinds stay mapped for their whole life
  uint64_t id = 0;         // unique, never reused: keys the barrier tracker
};

class Context : public std::enable_shared_from_this<Context> {
 public:
  static std::shared_ptr<Context> create(const VulkanOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A buffer of at least `bytes` from the pool (exact-size reuse), returned to the pool when
  // the last shared_ptr goes. Reuse inside a recording is safe because the recorder puts a
  // barrier before any write to a buffer read or written since the last barrier.
  std::shared_ptr<GpuBuffer> acquire(BufferKind kind, uint64_t bytes);
  // Destroys pooled free buffers beyond `keep_bytes`. Only call when no recorded or
  // submitted command can still reference a free buffer (the recorder does, when idle).
  void trim(uint64_t keep_bytes);
  // Called before retrying a failed allocation: must finish all work so trim() is safe.
  std::function<void()> make_idle;

  Api api;
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory_props{};
  VulkanDeviceInfo info;
  uint64_t max_binding_bytes = 0;  // storage-buffer range one descriptor may cover

  uint64_t buffers_allocated = 0;
  uint64_t buffers_reused = 0;
  uint64_t pool_cap_bytes = 1ull << 30;  // free bytes kept for reuse when idle

 private:
  Context() = default;
  GpuBuffer* allocate(BufferKind kind, uint64_t bytes);
  void destroy(GpuBuffer* b);
  void release(GpuBuffer* b);
  uint32_t memory_type(uint32_t allowed, BufferKind kind) const;

  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::multimap<std::pair<int, uint64_t>, GpuBuffer*> free_;  // (kind, size) -> buffer
  uint64_t free_bytes_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace atlas::vk
