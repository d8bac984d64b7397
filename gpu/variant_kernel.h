#pragma once
// A variant module's Vulkan kernel (gpu/variants/<module>/, paired with core/variants/<module>/):
// the device version of a module op (core/backend/module_op.h), found by the op's name, so a
// module adds no method to the backend, no line to the built-in pipeline table and no id to
// ShaderId. Each folder gpu/variants/<m>/ defines atlas::vk::variants::<m>_kernels(); the list
// of every folder's kernels is generated from the folders (cmake/module_registry.cmake).
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/module_op.h"
#include "gpu/vk_pipelines.h"
#include "gpu/vk_recorder.h"

namespace atlas::vk {

// What a kernel may use of the Vulkan backend (implemented by VulkanBackend).
class KernelApi {
 public:
  virtual ~KernelApi() = default;
  // The buffer behind an input handle; throws the backend's refusal for a foreign handle.
  virtual const GpuBuffer& buffer(const DTensor& t, const char* op, const char* what) const = 0;
  virtual DTensor make(Shape shape) = 0;  // an output tensor from the pool
  // A binding of a whole tensor of n floats (after fits(n)).
  virtual Binding whole(const GpuBuffer& b, uint64_t n) const = 0;
  virtual bool fits(uint64_t elems) const = 0;  // one binding can cover elems floats
  virtual Recorder& recorder() = 0;
  // The backend's built-in ops, for a kernel that composes them with its own dispatches (e.g.
  // the linear maps before an elementwise shader).
  virtual Backend& backend() = 0;
  // A kernel's constant data (a mask, an index list) as one storage buffer.
  virtual std::shared_ptr<GpuBuffer> upload_words(const std::vector<uint32_t>& words) = 0;
  // The device's limit of storage buffers bound to one shader (Vulkan guarantees only 4).
  virtual uint32_t max_storage_buffers() const = 0;
  // An attention mask as storage buffers: key_valid one uint per key (null when every key is
  // valid), the pattern and a causal window one bit per (query, key) (null when neither).
  struct MaskBuffers {
    std::shared_ptr<GpuBuffer> key_valid, allowed;
  };
  virtual MaskBuffers mask_buffers(const AttentionMask& mask, int64_t lq, int64_t lk) = 0;
  // A small buffer to bind where a shader's optional input or output is unused this time: the
  // shader must neither read nor write it (bind it as whole(placeholder(), 1)).
  virtual const GpuBuffer& placeholder() const = 0;
  virtual const Pipeline& pipeline(const ShaderSpec& shader) = 0;
  // The op's host reference instead (inputs downloaded, outputs uploaded), reported as a
  // fallback with `why` (e.g. a tensor larger than one binding).
  virtual std::vector<DTensor> on_host(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                       const void* args, const std::string& why) = 0;
};

struct VariantKernel {
  const ModuleOp& op;
  // Records the op; `args` points to the op's argument struct (ModuleOpOf's Args).
  std::vector<DTensor> (*run)(KernelApi& api, const std::vector<DTensor>& inputs, const void* args);
};

// Every variant kernel of the build, and the one of an op name (nullptr: none).
const std::vector<const VariantKernel*>& variant_kernels();
const VariantKernel* find_variant_kernel(std::string_view op_name);

}  // namespace atlas::vk
