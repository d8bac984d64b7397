#pragma once
// Command recording. Every op of the backend is recorded into the current command buffer;
// nothing is submitted until download() needs data or flush() is called, and the host never
// waits per op. Barriers are placed only where a command touches a buffer that an earlier
// command since the last barrier wrote (read-after-write, write-after-write) or read
// (write-after-read, which matters because freed buffers are reused from the pool at once).
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/tensor/error.h"
#include "gpu/vk_context.h"
#include "gpu/vk_pipelines.h"

namespace atlas::vk {

// maxComputeWorkGroupCount[0..2] that every Vulkan device guarantees: the kernels that give
// a workgroup to each row or (row, head) fall back to the host beyond it.
constexpr int64_t kMaxWorkgroups = 65535;

// One storage-buffer binding: a buffer or a window of it (offset aligned to
// minStorageBufferOffsetAlignment, range <= Context::max_binding_bytes).
struct Binding {
  const GpuBuffer* buffer = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize range = VK_WHOLE_SIZE;
};

class Recorder {
 public:
  explicit Recorder(std::shared_ptr<Context> ctx);
  ~Recorder();  // waits for submitted work
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Declares what the next command(s) read and write, inserting a barrier if one of them
  // depends on a command since the last barrier. Dispatches of one op that touch disjoint
  // parts of a buffer share one declaration and so need no barrier between them.
  void access(std::initializer_list<const GpuBuffer*> reads,
              std::initializer_list<const GpuBuffer*> writes);

  template <class PC>
  void dispatch(const Pipeline& p, const std::vector<Binding>& bindings, const PC& pc,
                uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
    if (bindings.size() != p.binding_count || sizeof(PC) != p.push_size)
      throw AtlasError(std::string("internal error: shader '") + p.name + "' expects " +
                       std::to_string(p.binding_count) + " bindings and " +
                       std::to_string(p.push_size) + " bytes of push constants, got " +
                       std::to_string(bindings.size()) + " and " + std::to_string(sizeof(PC)));
    dispatch_raw(p, bindings, &pc, gx, gy, gz);
  }

  // Records a buffer-to-buffer copy of `bytes` from src_offset to dst_offset. It declares its
  // own access unless `declared` says the caller's access() already covers it (several copies
  // of one op into disjoint parts of a buffer need no barrier between them).
  void copy(const GpuBuffer& src, const GpuBuffer& dst, VkDeviceSize bytes,
            VkDeviceSize src_offset = 0, VkDeviceSize dst_offset = 0, bool declared = false);
  // Makes the copies into Readback buffers visible to the host at the end of this batch.
  void need_host_read() { host_read_ = true; }
  // Keeps a buffer (a staging or readback buffer) alive until the batch that uses it ends.
  void keep(std::shared_ptr<GpuBuffer> b);

  void submit();  // ends and submits the current batch, if it has commands; no wait
  void finish();  // submit() and wait for every submitted batch, then recycle them

  uint64_t submissions() const { return submissions_; }
  uint64_t dispatches() const { return dispatches_; }
  uint64_t barriers() const { return barriers_; }

 private:
  struct Batch {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    std::vector<VkDescriptorPool> pools;
    size_t pool_used = 0;  // pools[0..pool_used] have been allocated from
    std::vector<std::shared_ptr<GpuBuffer>> keep;
  };

  Batch& current();
  VkDescriptorSet allocate_set(Batch& b, VkDescriptorSetLayout layout);
  void dispatch_raw(const Pipeline& p, const std::vector<Binding>& bindings, const void* pc,
                    uint32_t gx, uint32_t gy, uint32_t gz);
  void recycle(Batch& b);
  void barrier();
  void reap_finished();

  std::shared_ptr<Context> ctx_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<std::unique_ptr<Batch>> all_;  // owns every batch; the rest point into it
  Batch* current_ = nullptr;                  // begun, recording
  std::vector<Batch*> in_flight_;             // submitted, fence not yet seen signalled
  std::vector<Batch*> spare_;                 // reset, ready to begin
  bool recorded_ = false;         // current_ has at least one command
  bool leading_barrier_ = false;  // order the first command after earlier submissions
  bool host_read_ = false;
  std::unordered_set<uint64_t> read_, written_;  // buffer ids since the last barrier
  std::unordered_set<uint64_t> op_bound_;        // buffers declared by the last access()
  uint64_t submissions_ = 0, dispatches_ = 0, barriers_ = 0;
};

}  // namespace atlas::vk
