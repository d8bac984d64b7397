#include "gpu/vk_pipelines.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <unistd.h>
#include <vector>

#include "core/backend/backend.h"
#include "core/formats/atomic_file.h"
#include "core/formats/input_file.h"
#include "core/tensor/error.h"
#include "gpu/push_constants.h"
// Generated at build time from gpu/shaders/*.comp (see gpu/CMakeLists.txt).
#include "activation_spv.h"
#include "add_spv.h"
#include "attention_spv.h"
#include "embedding_packed_spv.h"
#include "embedding_spv.h"
#include "layer_norm_spv.h"
#include "linear_packed_spv.h"
#include "linear_spv.h"
#include "mul_spv.h"
#include "repeat_heads_spv.h"
#include "rms_norm_spv.h"
#include "row_normalize_spv.h"
#include "scale_norm_spv.h"
#include "scale_spv.h"

namespace atlas::vk {

namespace {

struct BuiltinShader {
  ShaderSpec spec;
  // The backend ops (core/backend/op_registry.h) this kernel computes: supports() reads them,
  // so an op is supported exactly when it has a line here.
  Op op;
  Op also = Op::Count;  // a second op of the same kernel, or none
};

#define ATLAS_SHADER(name, bindings, pc, ...) \
  BuiltinShader { ATLAS_SHADER_SPEC(name, bindings, pc), __VA_ARGS__ }

// Order matches ShaderId.
const BuiltinShader kShaders[] = {
    ATLAS_SHADER(add, 3, AddPC, Op::Add),
    ATLAS_SHADER(scale, 2, ScalePC, Op::Scale),
    ATLAS_SHADER(activation, 2, ActivationPC, Op::Activation),
    ATLAS_SHADER(layer_norm, 4, LayerNormPC, Op::LayerNorm),
    ATLAS_SHADER(scale_norm, 3, ScaleNormPC, Op::ScaleNorm),
    ATLAS_SHADER(row_normalize, 2, RowNormalizePC, Op::RowNormalize),
    ATLAS_SHADER(embedding, 3, EmbeddingPC, Op::Embedding),
    ATLAS_SHADER(linear, 4, LinearPC, Op::Linear),
    ATLAS_SHADER(attention, 8, AttentionPC, Op::Attention),
    ATLAS_SHADER(rms_norm, 3, RmsNormPC, Op::RmsNorm),
    ATLAS_SHADER(mul, 3, AddPC, Op::Mul),
    ATLAS_SHADER(repeat_heads, 2, RepeatHeadsPC, Op::RepeatHeads),
    ATLAS_SHADER(linear_packed, 4, LinearPackedPC, Op::Linear),
    ATLAS_SHADER(embedding_packed, 3, EmbeddingPackedPC, Op::Embedding),
};
static_assert(std::size(kShaders) == static_cast<size_t>(ShaderId::Count));

// What a SPIR-V module declares: the size of its push-constant block (from the member
// offsets, all members being 32-bit scalars) and its number of buffer bindings. Compared
// with the C++ side at pipeline creation, so a GLSL block that drifts from its struct in
// push_constants.h fails loudly instead of reading garbage.
struct SpirvLayout {
  uint32_t push_size = 0;
  uint32_t bindings = 0;
};

SpirvLayout reflect(const uint32_t* code, size_t words) {
  enum : uint32_t {
    kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeStruct = 30, kOpTypePointer = 32,
    kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72,
    kDecorationBinding = 33, kDecorationOffset = 35, kStoragePushConstant = 9
  };
  std::map<uint32_t, uint32_t> scalar_bytes, pointee;
  std::map<uint32_t, std::vector<uint32_t>> struct_members;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset;
  uint32_t push_var_type = 0, max_binding = 0;
  bool any_binding = false;
  for (size_t i = 5; i < words;) {
    const uint32_t n = code[i] >> 16, op = code[i] & 0xffff;
    if (n == 0 || i + n > words) break;
    const uint32_t* w = code + i;
    if ((op == kOpTypeInt || op == kOpTypeFloat) && n >= 3) scalar_bytes[w[1]] = w[2] / 8;
    if (op == kOpTypeStruct) struct_members[w[1]].assign(w + 2, w + n);
    if (op == kOpTypePointer && n >= 4) pointee[w[1]] = w[3];
    if (op == kOpVariable && n >= 4 && w[3] == kStoragePushConstant) push_var_type = w[1];
    if (op == kOpMemberDecorate && n >= 5 && w[3] == kDecorationOffset)
      member_offset[{w[1], w[2]}] = w[4];
    if (op == kOpDecorate && n >= 4 && w[2] == kDecorationBinding) {
      max_binding = std::max(max_binding, w[3]);
      any_binding = true;
    }
    i += n;
  }
  SpirvLayout out;
  out.bindings = any_binding ? max_binding + 1 : 0;
  if (push_var_type) {
    const uint32_t st = pointee[push_var_type];
    const auto& members = struct_members[st];
    for (uint32_t m = 0; m < members.size(); ++m)
      out.push_size = std::max(out.push_size, member_offset[{st, m}] + scalar_bytes[members[m]]);
  }
  return out;
}

std::filesystem::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "attention-atlas";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "attention-atlas";
  return {};
}

// The header every VkPipelineCache blob starts with (Vulkan spec, "Pipeline Cache"). A blob
// from another device or driver is dropped here rather than handed to the driver.
bool cache_matches(const std::vector<char>& blob, const VkPhysicalDeviceProperties& p) {
  if (blob.size() < 16 + VK_UUID_SIZE) return false;
  uint32_t header_len, version, vendor, device;
  std::memcpy(&header_len, blob.data(), 4);
  std::memcpy(&version, blob.data() + 4, 4);
  std::memcpy(&vendor, blob.data() + 8, 4);
  std::memcpy(&device, blob.data() + 12, 4);
  return header_len >= 16 + VK_UUID_SIZE && version == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         vendor == p.vendorID && device == p.deviceID &&
         std::memcmp(blob.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

}  // namespace

bool has_kernel(Op op) {
  for (const BuiltinShader& s : kShaders)
    if (s.op == op || s.also == op) return true;
  return false;
}

Pipelines::Pipelines(std::shared_ptr<Context> ctx, const std::string& cache_dir)
    : ctx_(std::move(ctx)) {
  const VkPhysicalDeviceProperties& p = ctx_->props;
  std::filesystem::path dir =
      cache_dir.empty() ? default_cache_dir() : std::filesystem::path(cache_dir);
  if (!dir.empty()) {
    char name[96];
    std::snprintf(name, sizeof name, "pipelines-%04x-%04x-%08x.bin", p.vendorID, p.deviceID,
                  p.driverVersion);
    cache_path_ = (dir / name).string();
  }
  std::vector<char> blob;
  if (!cache_path_.empty()) {
    // Through the input-file policy (a FIFO or device put there must not block or fill memory);
    // a cache that cannot be read is rebuilt, never an error.
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(cache_path_, ec))) {
      try {
        const std::string bytes = read_input_file(cache_path_, InputKind::Cache);
        blob.assign(bytes.begin(), bytes.end());
      } catch (const AtlasError&) {
        blob.clear();
      }
    }
    if (!cache_matches(blob, p)) blob.clear();
  }
  VkPipelineCacheCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  ci.initialDataSize = blob.size();
  ci.pInitialData = blob.empty() ? nullptr : blob.data();
  VkResult r = ctx_->api.vkCreatePipelineCache(ctx_->device, &ci, nullptr, &cache_);
  if (r != VK_SUCCESS && !blob.empty()) {  // a corrupt file must not stop the backend
    ci.initialDataSize = 0;
    ci.pInitialData = nullptr;
    blob.clear();
    r = ctx_->api.vkCreatePipelineCache(ctx_->device, &ci, nullptr, &cache_);
  }
  check(r, "vkCreatePipelineCache");
  cache_bytes_loaded_ = blob.size();
}

Pipelines::~Pipelines() {
  try {
    save_cache();
  } catch (...) {
  }
  const Api& f = ctx_->api;
  auto destroy = [&](Pipeline& pl) {
    if (pl.pipeline) f.vkDestroyPipeline(ctx_->device, pl.pipeline, nullptr);
    if (pl.layout) f.vkDestroyPipelineLayout(ctx_->device, pl.layout, nullptr);
    if (pl.set_layout) f.vkDestroyDescriptorSetLayout(ctx_->device, pl.set_layout, nullptr);
  };
  for (Pipeline& pl : pipes_) destroy(pl);
  for (auto& [spec, pl] : variant_pipes_) destroy(pl);
  if (cache_) f.vkDestroyPipelineCache(ctx_->device, cache_, nullptr);
}

void Pipelines::save_cache() const {
  if (cache_path_.empty() || !cache_ || created_ == 0) return;
  const Api& f = ctx_->api;
  size_t size = 0;
  if (f.vkGetPipelineCacheData(ctx_->device, cache_, &size, nullptr) != VK_SUCCESS || size == 0)
    return;
  std::vector<char> blob(size);
  if (f.vkGetPipelineCacheData(ctx_->device, cache_, &size, blob.data()) != VK_SUCCESS) return;
  blob.resize(size);
  std::error_code ec;
  const std::filesystem::path path(cache_path_);
  std::filesystem::create_directories(path.parent_path(), ec);
  // Written whole or not at all, so a full disk, a crash or a second process never leaves a
  // truncated cache; the cache is an optimisation, so a failure is silent.
  try {
    write_file_atomically(path.string(), std::string_view(blob.data(), blob.size()));
  } catch (const AtlasError&) {
  }
}

const Pipeline& Pipelines::get(ShaderId id) {
  Pipeline& pl = pipes_[static_cast<size_t>(id)];
  if (!pl.pipeline) create(kShaders[static_cast<size_t>(id)].spec, pl);
  return pl;
}

const Pipeline& Pipelines::get(const ShaderSpec& spec) {
  Pipeline& pl = variant_pipes_[&spec];
  if (!pl.pipeline) create(spec, pl);
  return pl;
}

void Pipelines::create(const ShaderSpec& spec, Pipeline& pl) {
  const Api& f = ctx_->api;
  VkDevice dev = ctx_->device;
  pl.name = spec.name;
  pl.binding_count = spec.bindings;
  pl.push_size = spec.push_size;
  const SpirvLayout declared = reflect(spec.code, spec.bytes / 4);
  if (declared.push_size != spec.push_size || declared.bindings != spec.bindings)
    throw AtlasError(std::string("internal error: shader '") + spec.name + "' declares " +
                     std::to_string(declared.bindings) + " bindings and a " +
                     std::to_string(declared.push_size) + "-byte push-constant block; the C++ "
                     "side expects " + std::to_string(spec.bindings) + " and " +
                     std::to_string(spec.push_size) + " (gpu/push_constants.h)");

  std::vector<VkDescriptorSetLayoutBinding> binds(spec.bindings);
  for (uint32_t b = 0; b < spec.bindings; ++b) {
    binds[b] = {};
    binds[b].binding = b;
    binds[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binds[b].descriptorCount = 1;
    binds[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{};
  dl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dl.bindingCount = spec.bindings;
  dl.pBindings = binds.data();
  check(f.vkCreateDescriptorSetLayout(dev, &dl, nullptr, &pl.set_layout),
        std::string("vkCreateDescriptorSetLayout for shader ") + spec.name);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_size};
  VkPipelineLayoutCreateInfo ll{};
  ll.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  ll.setLayoutCount = 1;
  ll.pSetLayouts = &pl.set_layout;
  ll.pushConstantRangeCount = 1;
  ll.pPushConstantRanges = &range;
  check(f.vkCreatePipelineLayout(dev, &ll, nullptr, &pl.layout),
        std::string("vkCreatePipelineLayout for shader ") + spec.name);

  VkShaderModuleCreateInfo mi{};
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = spec.bytes;
  mi.pCode = spec.code;
  VkShaderModule module = VK_NULL_HANDLE;
  check(f.vkCreateShaderModule(dev, &mi, nullptr, &module),
        std::string("vkCreateShaderModule for shader ") + spec.name);

  VkComputePipelineCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.layout = pl.layout;
  VkResult r = f.vkCreateComputePipelines(dev, cache_, 1, &pi, nullptr, &pl.pipeline);
  f.vkDestroyShaderModule(dev, module, nullptr);
  if (r != VK_SUCCESS) pl.pipeline = VK_NULL_HANDLE;
  check(r, std::string("vkCreateComputePipelines for shader ") + spec.name);
  ++created_;
}

}  // namespace atlas::vk
