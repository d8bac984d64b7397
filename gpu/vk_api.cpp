#include "gpu/vk_api.h"

#include <dlfcn.h>

#include <mutex>

#include "core/tensor/error.h"

namespace atlas::vk {

namespace {

void* open_loader() {
  // Opened once and never closed: function pointers from it live as long as the process.
  static std::once_flag once;
  static void* handle = nullptr;
  std::call_once(once, [] {
    handle = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) handle = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
  });
  return handle;
}

template <class F>
void load_required(F& slot, PFN_vkVoidFunction fn, const char* name) {
  if (!fn)
    throw AtlasError(std::string("Vulkan loader lacks ") + name +
                     "; update the Vulkan loader (libvulkan1) or use --backend cpu");
  slot = reinterpret_cast<F>(fn);
}

}  // namespace

Api load_global_api() {
  void* lib = open_loader();
  if (!lib) throw AtlasError("no Vulkan loader (libvulkan.so.1) found; using the CPU backend");
  Api api;
  api.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
  if (!api.vkGetInstanceProcAddr)
    throw AtlasError("libvulkan.so.1 has no vkGetInstanceProcAddr; using the CPU backend");
#define ATLAS_VK_LOAD(name) \
  load_required(api.name, api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name), #name);
  ATLAS_VK_GLOBAL_FUNCS(ATLAS_VK_LOAD)
#undef ATLAS_VK_LOAD
  api.vkEnumerateInstanceVersion = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
      api.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"));
  return api;
}

void load_instance_api(Api& api, VkInstance instance) {
#define ATLAS_VK_LOAD(name) \
  load_required(api.name, api.vkGetInstanceProcAddr(instance, #name), #name);
  ATLAS_VK_INSTANCE_FUNCS(ATLAS_VK_LOAD)
#undef ATLAS_VK_LOAD
  api.vkGetPhysicalDeviceProperties2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(
      api.vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceProperties2"));
  api.vkCreateDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  api.vkDestroyDebugUtilsMessengerEXT = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
      api.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
}

void load_device_api(Api& api, VkDevice device) {
#define ATLAS_VK_LOAD(name) load_required(api.name, api.vkGetDeviceProcAddr(device, #name), #name);
  ATLAS_VK_DEVICE_FUNCS(ATLAS_VK_LOAD)
#undef ATLAS_VK_LOAD
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

void check(VkResult r, const std::string& what) {
  if (r == VK_SUCCESS) return;
  std::string msg = "Vulkan: " + what + " failed (" + result_name(r) + " " +
                    std::to_string(static_cast<int>(r)) + ")";
  if (r == VK_ERROR_DEVICE_LOST) msg += "; the GPU driver reset the device, use --backend cpu";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    msg += "; try a shorter input or --backend cpu";
  throw AtlasError(msg);
}

}  // namespace atlas::vk
