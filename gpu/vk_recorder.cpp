#include "gpu/vk_recorder.h"

namespace atlas::vk {

namespace {
constexpr size_t kMaxInFlight = 8;     // flush() without download() must not grow forever
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kMaxBindings = 14;  // the most any shader has (relative_attention)
}  // namespace

Recorder::Recorder(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  VkCommandPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  ci.queueFamilyIndex = ctx_->queue_family;
  check(ctx_->api.vkCreateCommandPool(ctx_->device, &ci, nullptr, &pool_), "vkCreateCommandPool");
}

Recorder::~Recorder() {
  const Api& f = ctx_->api;
  try {
    finish();
  } catch (...) {
  }
  f.vkDeviceWaitIdle(ctx_->device);
  for (auto& b : all_) {
    b->keep.clear();
    for (VkDescriptorPool p : b->pools) f.vkDestroyDescriptorPool(ctx_->device, p, nullptr);
    if (b->fence) f.vkDestroyFence(ctx_->device, b->fence, nullptr);
  }
  if (pool_) f.vkDestroyCommandPool(ctx_->device, pool_, nullptr);  // frees the command buffers
}

Recorder::Batch& Recorder::current() {
  if (current_) return *current_;
  const Api& f = ctx_->api;
  Batch* b = nullptr;
  if (!spare_.empty()) {
    b = spare_.back();
    spare_.pop_back();
  } else {
    auto nb = std::make_unique<Batch>();
    VkCommandBufferAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(f.vkAllocateCommandBuffers(ctx_->device, &ai, &nb->cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{};
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    check(f.vkCreateFence(ctx_->device, &fi, nullptr, &nb->fence), "vkCreateFence");
    b = nb.get();
    all_.push_back(std::move(nb));
  }
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = f.vkBeginCommandBuffer(b->cmd, &bi); r != VK_SUCCESS) {
    spare_.push_back(b);
    check(r, "vkBeginCommandBuffer");
  }
  current_ = b;
  recorded_ = false;
  read_.clear();
  written_.clear();
  // Buffers go back to the pool as soon as their tensor dies, so a buffer may still be in
  // use by a batch that was submitted earlier; one barrier at the start orders after it.
  leading_barrier_ = submissions_ > 0;
  return *b;
}

void Recorder::barrier() {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  ctx_->api.vkCmdPipelineBarrier(current().cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0,
                                 nullptr);
  ++barriers_;
  read_.clear();
  written_.clear();
}

void Recorder::access(std::initializer_list<const GpuBuffer*> reads,
                      std::initializer_list<const GpuBuffer*> writes) {
  current();
  bool hazard = leading_barrier_;
  for (const GpuBuffer* r : reads)
    if (written_.count(r->id)) hazard = true;                          // read after write
  for (const GpuBuffer* w : writes)
    if (written_.count(w->id) || read_.count(w->id)) hazard = true;  // write after write/read
  if (hazard) barrier();
  leading_barrier_ = false;
  op_bound_.clear();
  for (const GpuBuffer* r : reads) {
    read_.insert(r->id);
    op_bound_.insert(r->id);
  }
  for (const GpuBuffer* w : writes) {
    written_.insert(w->id);
    op_bound_.insert(w->id);
  }
}

VkDescriptorSet Recorder::allocate_set(Batch& b, VkDescriptorSetLayout layout) {
  const Api& f = ctx_->api;
  for (;;) {
    if (b.pool_used == b.pools.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * kMaxBindings};
      VkDescriptorPoolCreateInfo ci{};
      ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      ci.maxSets = kSetsPerPool;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      check(f.vkCreateDescriptorPool(ctx_->device, &ci, nullptr, &pool), "vkCreateDescriptorPool");
      b.pools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = b.pools[b.pool_used];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkResult r = f.vkAllocateDescriptorSets(ctx_->device, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      check(r, "vkAllocateDescriptorSets");
    ++b.pool_used;  // this pool is full for this batch; the next one (or a new one)
  }
}

void Recorder::dispatch_raw(const Pipeline& p, const std::vector<Binding>& bindings,
                            const void* pc, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (gx == 0 || gy == 0 || gz == 0) return;
  const auto& lim = ctx_->props.limits.maxComputeWorkGroupCount;
  if (gx > lim[0] || gy > lim[1] || gz > lim[2])
    throw AtlasError(std::string("internal error: shader '") + p.name +
                     "' dispatched with more workgroups than the device allows");
  for (const Binding& b : bindings)
    if (!op_bound_.count(b.buffer->id))
      throw AtlasError(std::string("internal error: shader '") + p.name +
                       "' binds a buffer its op did not declare to the barrier tracker");
  const Api& f = ctx_->api;
  Batch& batch = current();
  if (bindings.size() > kMaxBindings)
    throw AtlasError(std::string("internal error: shader '") + p.name + "' has more bindings "
                     "than the recorder's descriptor pools hold (kMaxBindings)");
  VkDescriptorSet set = allocate_set(batch, p.set_layout);
  VkDescriptorBufferInfo infos[kMaxBindings];
  VkWriteDescriptorSet writes[kMaxBindings];
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = {bindings[i].buffer->buffer, bindings[i].offset, bindings[i].range};
    writes[i] = {};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  f.vkUpdateDescriptorSets(ctx_->device, static_cast<uint32_t>(bindings.size()), writes, 0,
                           nullptr);
  f.vkCmdBindPipeline(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  f.vkCmdBindDescriptorSets(batch.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                            nullptr);
  f.vkCmdPushConstants(batch.cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_size, pc);
  f.vkCmdDispatch(batch.cmd, gx, gy, gz);
  ++dispatches_;
  recorded_ = true;
}

void Recorder::copy(const GpuBuffer& src, const GpuBuffer& dst, VkDeviceSize bytes,
                    VkDeviceSize src_offset, VkDeviceSize dst_offset, bool declared) {
  if (bytes == 0) return;
  if (!declared) access({&src}, {&dst});
  VkBufferCopy region{src_offset, dst_offset, bytes};
  ctx_->api.vkCmdCopyBuffer(current().cmd, src.buffer, dst.buffer, 1, &region);
  recorded_ = true;
}

void Recorder::keep(std::shared_ptr<GpuBuffer> b) { current().keep.push_back(std::move(b)); }

void Recorder::submit() {
  if (!current_ || !recorded_) return;
  const Api& f = ctx_->api;
  Batch* b = current_;
  if (host_read_) {
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    f.vkCmdPipelineBarrier(b->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                           1, &mb, 0, nullptr, 0, nullptr);
  }
  current_ = nullptr;
  recorded_ = false;
  host_read_ = false;
  VkResult r = f.vkEndCommandBuffer(b->cmd);
  if (r == VK_SUCCESS) {
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &b->cmd;
    r = f.vkQueueSubmit(ctx_->queue, 1, &si, b->fence);
  }
  if (r != VK_SUCCESS) {
    recycle(*b);
    check(r, "vkQueueSubmit");
  }
  ++submissions_;
  in_flight_.push_back(b);
  reap_finished();
  while (in_flight_.size() > kMaxInFlight) {
    Batch* oldest = in_flight_.front();
    check(f.vkWaitForFences(ctx_->device, 1, &oldest->fence, VK_TRUE, UINT64_MAX),
          "vkWaitForFences");
    in_flight_.erase(in_flight_.begin());
    recycle(*oldest);
  }
}

void Recorder::reap_finished() {
  for (size_t i = 0; i < in_flight_.size();) {
    if (ctx_->api.vkGetFenceStatus(ctx_->device, in_flight_[i]->fence) == VK_SUCCESS) {
      recycle(*in_flight_[i]);
      in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void Recorder::finish() {
  submit();
  const Api& f = ctx_->api;
  for (Batch* b : in_flight_) {
    VkResult r = f.vkWaitForFences(ctx_->device, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS) {
      in_flight_.clear();  // the device is lost: nothing to recycle safely
      check(r, "vkWaitForFences");
    }
    recycle(*b);
  }
  in_flight_.clear();
  // Nothing recorded and nothing in flight: free pooled buffers cannot be referenced.
  if (!recorded_) ctx_->trim(ctx_->pool_cap_bytes);
}

void Recorder::recycle(Batch& b) {
  const Api& f = ctx_->api;
  f.vkResetFences(ctx_->device, 1, &b.fence);
  f.vkResetCommandBuffer(b.cmd, 0);
  for (size_t i = 0; i < b.pools.size() && i <= b.pool_used; ++i)
    f.vkResetDescriptorPool(ctx_->device, b.pools[i], 0);
  b.pool_used = 0;
  b.keep.clear();  // staging and readback buffers go back to the pool
  spare_.push_back(&b);
}

}  // namespace atlas::vk
