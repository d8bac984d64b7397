#pragma once
// The Vulkan implementation of atlas::Backend (internal; the public API is vulkan_backend.h).
// Ops validate shapes like the CPU backend, allocate their outputs from the pool, and record
// dispatches; big tensors are bound in windows of the device's storage-buffer range, and an
// op that cannot run on the device at all runs on the CPU backend, listed in fallbacks().
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/packed_matrix.h"
#include "gpu/variant_kernel.h"
#include "gpu/vk_context.h"
#include "gpu/vk_pipelines.h"
#include "gpu/vk_recorder.h"
#include "gpu/vulkan_backend.h"

namespace atlas::vk {

// Throws AtlasError("vulkan backend: OP: WHAT"), the form of every refusal of the ops.
[[noreturn]] void fail(const char* op, const std::string& what);

struct VkTensorStorage : DeviceStorage {
  std::shared_ptr<GpuBuffer> buffer;
  uint64_t backend_id = 0;  // Backend::instance_id() of the owner
  // A model weight held in its file's encoding (upload_weight, vk_packed.cpp): `buffer` holds
  // the encoded rows as stored, so only linear, embedding and download read it (buf() refuses
  // it to every other op). `host` is the matrix uploaded (its bytes outlive this tensor).
  std::shared_ptr<const PackedMatrix> packed;
};

// A window of a buffer bound as one descriptor: shader index = element index - base.
struct Window {
  Binding binding;
  uint32_t base = 0;
};

class VulkanBackend : public Backend, private KernelApi {
 public:
  explicit VulkanBackend(const VulkanOptions& options);
  ~VulkanBackend() override;

  std::string name() const override { return "vulkan (" + ctx_->info.name + ")"; }
  bool supports(Op op) const override;  // the ops of kShaders (vk_pipelines.cpp, has_kernel)
  DTensor upload(const Tensor& host) override;
  // vk_packed.cpp: weights of the types linear_packed.comp reads stay encoded on the device.
  DTensor upload_weight(const Tensor& host) override;
  Tensor download(const DTensor& t) override;
  std::vector<Tensor> download_all(const std::vector<DTensor>& ts) override;
  void flush() override { rec_->submit(); }
  uint64_t submission_count() const override { return rec_->submissions(); }
  std::vector<std::string> fallbacks() const override { return fallbacks_; }
  // Logged as "atlas: vulkan: <line>" once per line.
  void note_fallback(const std::string& line) override;

  DTensor linear(const DTensor& x, const DTensor& w, const DTensor& b) override;
  DTensor add(const DTensor& a, const DTensor& b) override;
  DTensor scale(const DTensor& x, float s) override;
  DTensor layer_norm(const DTensor& x, const DTensor& gamma, const DTensor& beta,
                     float eps) override;
  DTensor scale_norm(const DTensor& x, const DTensor& g, float eps) override;
  DTensor row_normalize(const DTensor& x, float eps) override;
  DTensor activation(const DTensor& x, Activation kind) override;
  DTensor embedding(const DTensor& table, const std::vector<int32_t>& ids,
                    float scale) override;
  AttentionResult attention(const DTensor& q, const DTensor& k, const DTensor& v,
                            const AttentionArgs& args) override;
  // vulkan_backend.cpp (Llama-family blocks)
  DTensor rms_norm(const DTensor& x, const DTensor& w, float eps) override;
  DTensor mul(const DTensor& a, const DTensor& b) override;
  // vk_repeat_heads.cpp (grouped-query heads)
  DTensor repeat_heads(const DTensor& x, int64_t groups, int64_t d_head) override;
  // Variant modules' ops: their kernels (gpu/variant_kernel.h) when this build has one.
  bool supports_module_op(const ModuleOp& op) const override;
  std::vector<DTensor> run_module_op(const ModuleOp& op, const std::vector<DTensor>& inputs,
                                     const void* args) override;
  // vk_rows.cpp (buffer copies)
  DTensor slice_rows(const DTensor& x, int64_t begin, int64_t count) override;
  DTensor concat_rows(const DTensor& a, const DTensor& b) override;

  VulkanBackendStats stats() const;

 private:
  // Shape checks and buffer access of an input handle (a float32 one: an encoded weight is
  // refused by name).
  const GpuBuffer& buf(const DTensor& t, const char* op, const char* what) const;
  // The storage of an encoded weight (upload_weight), nullptr for a float32 tensor.
  const VkTensorStorage* packed_of(const DTensor& t, const char* op, const char* what) const;
  // vk_packed.cpp: linear, embedding and download of an encoded weight.
  DTensor linear_packed(const DTensor& x, const DTensor& w, const VkTensorStorage& sw,
                        const DTensor& b);
  DTensor embedding_packed(const DTensor& table, const VkTensorStorage& st,
                           const std::vector<int32_t>& ids, float scale);
  Tensor download_packed(const DTensor& t, const VkTensorStorage& s);
  DTensor make(Shape shape) override;

  // KernelApi, for the variant kernels (make, whole and fits are above and below).
  const GpuBuffer& buffer(const DTensor& t, const char* op, const char* what) const override {
    return buf(t, op, what);
  }
  Recorder& recorder() override { return *rec_; }
  Backend& backend() override { return *this; }
  std::shared_ptr<GpuBuffer> upload_words(const std::vector<uint32_t>& words) override {
    return upload_bytes(words.data(), words.size() * 4);
  }
  uint32_t max_storage_buffers() const override;
  MaskBuffers mask_buffers(const AttentionMask& mask, int64_t lq, int64_t lk) override {
    return upload_mask(mask, lq, lk);
  }
  const GpuBuffer& placeholder() const override { return *dummy_; }
  const Pipeline& pipeline(const ShaderSpec& shader) override { return pipes_->get(shader); }
  std::vector<DTensor> on_host(const ModuleOp& op, const std::vector<DTensor>& inputs,
                               const void* args, const std::string& why) override;
  std::shared_ptr<GpuBuffer> upload_bytes(const void* data, uint64_t bytes);

  // The masks as device buffers (KernelApi::MaskBuffers); a sliding window becomes part of the
  // dense pattern unless the kernel tests it itself (`window_in_kernel`: attention.comp).
  MaskBuffers upload_mask(const AttentionMask& mask, int64_t lq, int64_t lk, bool window_in_kernel = false);

  // Binding of a whole tensor of n floats (caller checked fits()).
  Binding whole(const GpuBuffer& b, uint64_t n) const override;
  Window window(const GpuBuffer& b, uint64_t first, uint64_t count) const;
  bool fits(uint64_t elems) const override;            // one binding can cover elems floats
  uint64_t rows_per_window(uint64_t row_elems) const;  // 0 when one row does not fit

  DTensor elementwise(const char* op, ShaderId id, const DTensor& a, const DTensor* b,
                      float s, uint32_t kind);
  DTensor row_op(const char* op, ShaderId id, const DTensor& x, const DTensor* p1,
                 const DTensor* p2, float eps);

  // Runs an op on the CPU backend (downloading inputs, uploading the result); the caller
  // records why with note_fallback().
  Backend& cpu();
  DTensor to_cpu(const DTensor& t);
  DTensor from_cpu(const DTensor& t);

  std::shared_ptr<Context> ctx_;
  std::unique_ptr<Pipelines> pipes_;
  std::unique_ptr<Recorder> rec_;
  std::shared_ptr<GpuBuffer> dummy_;  // bound where a shader's optional input is unused
  std::unique_ptr<Backend> cpu_;
  std::vector<std::string> fallbacks_;
  std::set<std::string> fallback_seen_;
};

}  // namespace atlas::vk
