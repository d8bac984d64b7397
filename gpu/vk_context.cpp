#include "gpu/vk_context.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/tensor/error.h"

namespace atlas {

namespace {

std::mutex g_validation_mutex;
std::vector<std::string> g_validation_messages;

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  std::string msg = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error: "
                                                                                : "warning: ";
  if (data && data->pMessageIdName) msg += std::string(data->pMessageIdName) + ": ";
  if (data && data->pMessage) msg += data->pMessage;
  std::fprintf(stderr, "[vulkan validation] %s\n", msg.c_str());
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  g_validation_messages.push_back(std::move(msg));
  return VK_FALSE;  // never abort the call: the test decides
}

std::string version_str(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string type_str(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

// Lower is better: discrete > integrated > virtual > cpu > other.
int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Instance {
  vk::Api api;
  VkInstance instance = VK_NULL_HANDLE;
  uint32_t api_version = VK_API_VERSION_1_0;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
};

VkDebugUtilsMessengerCreateInfoEXT messenger_info() {
  VkDebugUtilsMessengerCreateInfoEXT ci{};
  ci.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  ci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  ci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  ci.pfnUserCallback = on_validation_message;
  return ci;
}

Instance create_instance(bool validation) {
  Instance in;
  in.api = vk::load_global_api();
  vk::Api& f = in.api;
  if (f.vkEnumerateInstanceVersion) {
    uint32_t v = VK_API_VERSION_1_0;
    if (f.vkEnumerateInstanceVersion(&v) == VK_SUCCESS) in.api_version = v;
  }
  // Ask for what the loader offers up to 1.3: it caps the device version we may use, and
  // 1.2 is needed to read the driver name.
  in.api_version = std::min<uint32_t>(in.api_version, VK_API_VERSION_1_3);

  std::vector<const char*> layers, extensions;
  bool sync_validation = false;
  if (validation) {
    uint32_t n = 0;
    f.vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    f.vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found)
      throw AtlasError(
          "Vulkan validation was requested but VK_LAYER_KHRONOS_validation is not installed "
          "(Debian/Ubuntu: apt-get install vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    uint32_t ne = 0;
    f.vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &ne, nullptr);
    std::vector<VkExtensionProperties> exts(ne);
    f.vkEnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &ne, exts.data());
    for (const auto& e : exts)
      if (std::strcmp(e.extensionName, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME) == 0)
        sync_validation = true;
    if (sync_validation) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
  }

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "attention-atlas";
  app.applicationVersion = 1;
  app.pEngineName = "atlas";
  app.apiVersion = in.api_version;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkDebugUtilsMessengerCreateInfoEXT mci = messenger_info();
  if (validation) ci.pNext = &mci;  // also catches messages of instance creation/destruction
  // Synchronization validation reports missing barriers (hazards between dispatches), which
  // lavapipe, running dispatches one after another, would otherwise hide.
  const VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{};
  features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  features.pNext = &mci;
  if (sync_validation) ci.pNext = &features;
  VkResult r = f.vkCreateInstance(&ci, nullptr, &in.instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw AtlasError("no Vulkan driver is installed (vkCreateInstance: incompatible driver); "
                     "using the CPU backend");
  vk::check(r, "vkCreateInstance");
  vk::load_instance_api(f, in.instance);
  if (validation) {
    if (!f.vkCreateDebugUtilsMessengerEXT) {
      f.vkDestroyInstance(in.instance, nullptr);
      throw AtlasError("Vulkan validation: VK_EXT_debug_utils is not available");
    }
    vk::check(f.vkCreateDebugUtilsMessengerEXT(in.instance, &mci, nullptr, &in.messenger),
              "vkCreateDebugUtilsMessengerEXT");
  }
  return in;
}

void destroy_instance(Instance& in) {
  if (in.messenger) in.api.vkDestroyDebugUtilsMessengerEXT(in.instance, in.messenger, nullptr);
  if (in.instance) in.api.vkDestroyInstance(in.instance, nullptr);
  in.messenger = VK_NULL_HANDLE;
  in.instance = VK_NULL_HANDLE;
}

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties props{};
  VulkanDeviceInfo info;
  int compute_family = -1;
};

std::vector<PhysicalDevice> enumerate(const Instance& in) {
  const vk::Api& f = in.api;
  uint32_t n = 0;
  vk::check(f.vkEnumeratePhysicalDevices(in.instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(n);
  vk::check(f.vkEnumeratePhysicalDevices(in.instance, &n, handles.data()),
            "vkEnumeratePhysicalDevices");
  std::vector<PhysicalDevice> out;
  for (uint32_t i = 0; i < n; ++i) {
    PhysicalDevice d;
    d.handle = handles[i];
    f.vkGetPhysicalDeviceProperties(d.handle, &d.props);
    d.info.index = static_cast<int>(i);
    d.info.name = d.props.deviceName;
    d.info.type = type_str(d.props.deviceType);
    d.info.api_version = version_str(d.props.apiVersion);
    d.info.driver = "driver version 0x" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%x", d.props.driverVersion);
      return std::string(buf);
    }();
    if (f.vkGetPhysicalDeviceProperties2 && in.api_version >= VK_API_VERSION_1_2 &&
        d.props.apiVersion >= VK_API_VERSION_1_2) {
      VkPhysicalDeviceDriverProperties drv{};
      drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
      VkPhysicalDeviceProperties2 p2{};
      p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
      p2.pNext = &drv;
      f.vkGetPhysicalDeviceProperties2(d.handle, &p2);
      d.info.driver = std::string(drv.driverName) + " " + drv.driverInfo;
    }
    uint32_t qn = 0;
    f.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> qf(qn);
    f.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &qn, qf.data());
    // Prefer a compute-only family (async compute on discrete GPUs), else any with compute.
    for (uint32_t q = 0; q < qn; ++q)
      if ((qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[q].queueFlags & VK_QUEUE_GRAPHICS_BIT))
        d.compute_family = static_cast<int>(q);
    if (d.compute_family < 0)
      for (uint32_t q = 0; q < qn && d.compute_family < 0; ++q)
        if (qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT) d.compute_family = static_cast<int>(q);
    out.push_back(std::move(d));
  }
  return out;
}

std::string describe(const std::vector<PhysicalDevice>& devs) {
  std::string s;
  for (const auto& d : devs)
    s += (s.empty() ? "" : "; ") + std::to_string(d.info.index) + ": " + d.info.name + " [" +
         d.info.type + "]";
  return s;
}

const PhysicalDevice& select(const std::vector<PhysicalDevice>& devs, const std::string& want) {
  std::vector<const PhysicalDevice*> usable;
  for (const auto& d : devs)
    if (d.compute_family >= 0) usable.push_back(&d);
  if (usable.empty())
    throw AtlasError("no Vulkan device with a compute queue (found: " + describe(devs) +
                     "); using the CPU backend");
  std::stable_sort(usable.begin(), usable.end(), [](const auto* a, const auto* b) {
    return type_rank(a->props.deviceType) < type_rank(b->props.deviceType);
  });
  if (want.empty()) return *usable.front();
  const bool numeric = std::all_of(want.begin(), want.end(),
                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (numeric) {
    const long idx = std::strtol(want.c_str(), nullptr, 10);
    for (const auto* d : usable)
      if (d->info.index == idx) return *d;
    throw AtlasError("Vulkan device index " + want + " does not exist or has no compute queue; " +
                     "available: " + describe(devs));
  }
  for (const auto* d : usable)
    if (lower(d->info.name).find(lower(want)) != std::string::npos) return *d;
  throw AtlasError("no Vulkan device name contains \"" + want + "\"; available: " +
                   describe(devs) + " (give an index or part of a name)");
}

}  // namespace

std::vector<std::string> take_vulkan_validation_messages() {
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  std::vector<std::string> out;
  out.swap(g_validation_messages);
  return out;
}

std::vector<VulkanDeviceInfo> list_vulkan_devices() {
  Instance in = create_instance(false);
  std::vector<PhysicalDevice> devs;
  try {
    devs = enumerate(in);
  } catch (...) {
    destroy_instance(in);
    throw;
  }
  destroy_instance(in);
  if (devs.empty())
    throw AtlasError("the Vulkan loader found no device (is a driver such as mesa-vulkan-drivers "
                     "installed?); using the CPU backend");
  std::vector<VulkanDeviceInfo> out;
  for (auto& d : devs) out.push_back(d.info);
  return out;
}

bool vulkan_has_non_cpu_device() {
  try {
    for (const auto& d : list_vulkan_devices())
      if (d.type != "cpu") return true;
  } catch (...) {
  }
  return false;
}

namespace vk {

std::shared_ptr<Context> Context::create(const VulkanOptions& options) {
  std::shared_ptr<Context> c(new Context());
  Instance in = create_instance(options.validation);
  c->api = in.api;
  c->instance = in.instance;
  c->messenger_ = in.messenger;
  // From here on ~Context cleans up whatever was created.
  const Api& f = c->api;
  std::vector<PhysicalDevice> devs = enumerate(in);
  if (devs.empty())
    throw AtlasError("the Vulkan loader found no device (is a driver such as mesa-vulkan-drivers "
                     "installed?); using the CPU backend");
  const PhysicalDevice& pd = select(devs, options.device);
  c->physical = pd.handle;
  c->props = pd.props;
  c->info = pd.info;
  c->queue_family = static_cast<uint32_t>(pd.compute_family);
  f.vkGetPhysicalDeviceMemoryProperties(c->physical, &c->memory_props);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = c->queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  check(f.vkCreateDevice(c->physical, &dci, nullptr, &c->device),
        "vkCreateDevice on " + c->info.name);
  load_device_api(c->api, c->device);
  c->api.vkGetDeviceQueue(c->device, c->queue_family, 0, &c->queue);

  c->max_binding_bytes = c->props.limits.maxStorageBufferRange;
  if (options.max_binding_bytes > 0)
    c->max_binding_bytes = std::min<uint64_t>(c->max_binding_bytes,
                                              std::max<uint64_t>(options.max_binding_bytes, 1024));
  return c;
}

Context::~Context() {
  if (device) {
    api.vkDeviceWaitIdle(device);
    for (auto& [key, b] : free_) destroy(b);
    free_.clear();
    api.vkDestroyDevice(device, nullptr);
  }
  if (messenger_) api.vkDestroyDebugUtilsMessengerEXT(instance, messenger_, nullptr);
  if (instance) api.vkDestroyInstance(instance, nullptr);
}

uint32_t Context::memory_type(uint32_t allowed, BufferKind kind) const {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags need = 0, prefer = 0;
  switch (kind) {
    case BufferKind::Device: prefer = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case BufferKind::Staging: need = host; break;
    case BufferKind::Readback: need = host; prefer = VK_MEMORY_PROPERTY_HOST_CACHED_BIT; break;
  }
  int fallback = -1;
  for (uint32_t i = 0; i < memory_props.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    const VkMemoryPropertyFlags fl = memory_props.memoryTypes[i].propertyFlags;
    if ((fl & need) != need) continue;
    if ((fl & prefer) == prefer) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  if (fallback < 0)
    throw AtlasError("Vulkan device " + info.name + " has no suitable memory type for " +
                     (kind == BufferKind::Device ? "storage buffers" : "host transfers"));
  return static_cast<uint32_t>(fallback);
}

GpuBuffer* Context::allocate(BufferKind kind, uint64_t bytes) {
  const Api& f = api;
  auto b = std::make_unique<GpuBuffer>();
  b->kind = kind;
  b->size = bytes;
  b->id = next_id_++;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = bytes;
  bci.usage = kind == BufferKind::Device ? VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                               VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                               VK_BUFFER_USAGE_TRANSFER_DST_BIT
              : kind == BufferKind::Staging ? VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                                            : VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(f.vkCreateBuffer(device, &bci, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req{};
  f.vkGetBufferMemoryRequirements(device, b->buffer, &req);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  try {
    mai.memoryTypeIndex = memory_type(req.memoryTypeBits, kind);
  } catch (...) {
    f.vkDestroyBuffer(device, b->buffer, nullptr);
    throw;
  }
  VkResult r = f.vkAllocateMemory(device, &mai, nullptr, &b->memory);
  if ((r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) && make_idle) {
    make_idle();  // finish queued work so pooled free buffers can go
    trim(0);
    r = f.vkAllocateMemory(device, &mai, nullptr, &b->memory);
  }
  if (r != VK_SUCCESS) {
    f.vkDestroyBuffer(device, b->buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw AtlasError("Vulkan device " + info.name + " is out of memory allocating " +
                       std::to_string((bytes + (1 << 20) - 1) >> 20) +
                       " MiB; use a shorter input, trace less, or --backend cpu");
    check(r, "vkAllocateMemory");
  }
  if (VkResult br = f.vkBindBufferMemory(device, b->buffer, b->memory, 0); br != VK_SUCCESS) {
    destroy(b.get());
    check(br, "vkBindBufferMemory");
  }
  if (kind != BufferKind::Device) {
    if (VkResult mr = f.vkMapMemory(device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
        mr != VK_SUCCESS) {
      destroy(b.get());
      check(mr, "vkMapMemory");
    }
  }
  ++buffers_allocated;
  return b.release();
}

void Context::destroy(GpuBuffer* b) {
  if (b->mapped) api.vkUnmapMemory(device, b->memory);
  if (b->buffer) api.vkDestroyBuffer(device, b->buffer, nullptr);
  if (b->memory) api.vkFreeMemory(device, b->memory, nullptr);
  delete b;
}

std::shared_ptr<GpuBuffer> Context::acquire(BufferKind kind, uint64_t bytes) {
  // 256-byte granularity: keeps every size a multiple of any storage-buffer offset alignment
  // and lets near-equal shapes share pool slots.
  bytes = std::max<uint64_t>(256, (bytes + 255) & ~uint64_t{255});
  GpuBuffer* b = nullptr;
  auto it = free_.find({static_cast<int>(kind), bytes});
  if (it != free_.end()) {
    b = it->second;
    free_.erase(it);
    free_bytes_ -= b->size;
    ++buffers_reused;
  } else {
    b = allocate(kind, bytes);
  }
  std::shared_ptr<Context> self = shared_from_this();
  return std::shared_ptr<GpuBuffer>(b, [self](GpuBuffer* p) { self->release(p); });
}

void Context::release(GpuBuffer* b) {
  free_.emplace(std::make_pair(static_cast<int>(b->kind), b->size), b);
  free_bytes_ += b->size;
}

void Context::trim(uint64_t keep_bytes) {
  // Largest first: frees the most memory for the fewest pool slots lost.
  while (free_bytes_ > keep_bytes && !free_.empty()) {
    auto largest = free_.begin();
    for (auto j = free_.begin(); j != free_.end(); ++j)
      if (j->second->size > largest->second->size) largest = j;
    free_bytes_ -= largest->second->size;
    destroy(largest->second);
    free_.erase(largest);
  }
}

}  // namespace vk
}  // namespace atlas
