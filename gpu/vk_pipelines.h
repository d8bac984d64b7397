#pragma once
// Compute pipelines: one per shader, created on first use and kept; all share one
// VkPipelineCache that is loaded from and saved to the user's cache folder, per device.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "gpu/vk_context.h"

namespace atlas::vk {

enum class ShaderId {
  Add,
  Scale,
  Activation,
  LayerNorm,
  ScaleNorm,
  RowNormalize,
  Embedding,
  Linear,
  Attention,
  RmsNorm,
  Mul,
  RepeatHeads,
  LinearPacked,     // linear / embedding with weights held in their file's encoding
  EmbeddingPacked,
  Count
};

// A compiled shader: its SPIR-V (embedded at build time, gpu/CMakeLists.txt) and the contract
// of its C++ side, checked against what the SPIR-V declares when the pipeline is created.
struct ShaderSpec {
  const char* name;
  const uint32_t* code;
  size_t bytes;
  uint32_t bindings;   // storage buffers 0..bindings-1
  uint32_t push_size;  // sizeof the C++ push-constant struct
};

// A ShaderSpec of the SPIR-V array spv_<name> (the header <name>_spv.h) with push-constant
// struct `pc`.
#define ATLAS_SHADER_SPEC(name, bindings, pc) \
  ::atlas::vk::ShaderSpec { #name, spv_##name, sizeof(spv_##name), bindings, sizeof(pc) }

// Whether a kernel of kShaders (vk_pipelines.cpp) computes `op`: the Vulkan backend's
// supports(), read from the same table that creates the pipelines.
bool has_kernel(Op op);

struct Pipeline {
  const char* name = "";
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t binding_count = 0;  // storage buffers 0..n-1, checked at every dispatch
  uint32_t push_size = 0;      // sizeof the C++ push-constant struct, checked at every dispatch
};

class Pipelines {
 public:
  // cache_dir "" = $XDG_CACHE_HOME/attention-atlas or ~/.cache/attention-atlas.
  Pipelines(std::shared_ptr<Context> ctx, const std::string& cache_dir);
  ~Pipelines();  // writes the pipeline cache (best effort: a read-only home is not an error)
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  const Pipeline& get(ShaderId id);
  // The pipeline of a shader outside the built-in table (a variant module's kernel,
  // gpu/variant_kernel.h), keyed by the spec's address.
  const Pipeline& get(const ShaderSpec& spec);

  uint64_t created() const { return created_; }
  uint64_t cache_bytes_loaded() const { return cache_bytes_loaded_; }
  const std::string& cache_path() const { return cache_path_; }
  void save_cache() const;

 private:
  std::shared_ptr<Context> ctx_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string cache_path_;
  uint64_t cache_bytes_loaded_ = 0;
  uint64_t created_ = 0;
  std::array<Pipeline, static_cast<size_t>(ShaderId::Count)> pipes_{};
  std::map<const ShaderSpec*, Pipeline> variant_pipes_;

  void create(const ShaderSpec& spec, Pipeline& pl);
};

}  // namespace atlas::vk
