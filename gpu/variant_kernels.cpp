#include "gpu/variant_kernel.h"

namespace atlas::vk {

// Generated (cmake/module_registry.cmake): every folder's <m>_kernels(), concatenated.
std::vector<const VariantKernel*> generated_variant_kernels();

const std::vector<const VariantKernel*>& variant_kernels() {
  static const std::vector<const VariantKernel*> all = generated_variant_kernels();
  return all;
}

const VariantKernel* find_variant_kernel(std::string_view op_name) {
  for (const VariantKernel* k : variant_kernels())
    if (op_name == k->op.name) return k;
  return nullptr;
}

}  // namespace atlas::vk
