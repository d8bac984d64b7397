#pragma once
// The Vulkan entry points the backend uses, loaded at run time. The loader is opened with
// dlopen("libvulkan.so.1") instead of linking it, so a machine without Vulkan still runs the
// CPU backend and gets a clear message instead of a failure at program start.
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

namespace atlas::vk {

// Functions callable before an instance exists.
#define ATLAS_VK_GLOBAL_FUNCS(X)           \
  X(vkCreateInstance)                      \
  X(vkEnumerateInstanceLayerProperties)    \
  X(vkEnumerateInstanceExtensionProperties)

#define ATLAS_VK_INSTANCE_FUNCS(X)            \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define ATLAS_VK_DEVICE_FUNCS(X)     \
  X(vkDestroyDevice)                 \
  X(vkGetDeviceQueue)                \
  X(vkDeviceWaitIdle)                \
  X(vkCreateBuffer)                  \
  X(vkDestroyBuffer)                 \
  X(vkGetBufferMemoryRequirements)   \
  X(vkAllocateMemory)                \
  X(vkFreeMemory)                    \
  X(vkBindBufferMemory)              \
  X(vkMapMemory)                     \
  X(vkUnmapMemory)                   \
  X(vkCreateShaderModule)            \
  X(vkDestroyShaderModule)           \
  X(vkCreateDescriptorSetLayout)     \
  X(vkDestroyDescriptorSetLayout)    \
  X(vkCreatePipelineLayout)          \
  X(vkDestroyPipelineLayout)         \
  X(vkCreateComputePipelines)        \
  X(vkDestroyPipeline)               \
  X(vkCreatePipelineCache)           \
  X(vkDestroyPipelineCache)          \
  X(vkGetPipelineCacheData)          \
  X(vkCreateDescriptorPool)          \
  X(vkDestroyDescriptorPool)         \
  X(vkResetDescriptorPool)           \
  X(vkAllocateDescriptorSets)        \
  X(vkUpdateDescriptorSets)          \
  X(vkCreateCommandPool)             \
  X(vkDestroyCommandPool)            \
  X(vkAllocateCommandBuffers)        \
  X(vkResetCommandBuffer)            \
  X(vkBeginCommandBuffer)            \
  X(vkEndCommandBuffer)              \
  X(vkCmdBindPipeline)               \
  X(vkCmdBindDescriptorSets)         \
  X(vkCmdPushConstants)              \
  X(vkCmdDispatch)                   \
  X(vkCmdPipelineBarrier)            \
  X(vkCmdCopyBuffer)                 \
  X(vkCreateFence)                   \
  X(vkDestroyFence)                  \
  X(vkResetFences)                   \
  X(vkWaitForFences)                 \
  X(vkGetFenceStatus)                \
  X(vkQueueSubmit)

struct Api {
#define ATLAS_VK_MEMBER(name) PFN_##name name = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  ATLAS_VK_GLOBAL_FUNCS(ATLAS_VK_MEMBER)
  ATLAS_VK_INSTANCE_FUNCS(ATLAS_VK_MEMBER)
  ATLAS_VK_DEVICE_FUNCS(ATLAS_VK_MEMBER)
  // Optional: absent on a Vulkan 1.0 loader / without VK_EXT_debug_utils.
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 vkGetPhysicalDeviceProperties2 = nullptr;
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
#undef ATLAS_VK_MEMBER
};

// Opens the loader once per process and fills the global entry points. Throws AtlasError
// "no Vulkan loader (libvulkan.so.1) found; using the CPU backend" when it is missing.
Api load_global_api();
void load_instance_api(Api& api, VkInstance instance);
void load_device_api(Api& api, VkDevice device);

const char* result_name(VkResult r);
// Throws AtlasError("Vulkan: <what> failed (<VK_ERROR_...>)") unless r is VK_SUCCESS.
void check(VkResult r, const std::string& what);

}  // namespace atlas::vk
