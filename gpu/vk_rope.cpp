// Rotary position embedding (shaders/rope.comp) and grouped-query heads
// (shaders/repeat_heads.comp) on the device: one dispatch per call each, so the attention
// inputs of a Llama-family layer are prepared without reading anything back.
#include "core/variants/rotary/rope.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

DTensor VulkanBackend::rope(const DTensor& x, const DTensor& table, const RopeArgs& args) {
  const char* op = "rope";
  check_rope_shapes(x.shape, table.shape, args);
  const GpuBuffer& bx = buf(x, op, "x");
  const GpuBuffer& bt = buf(table, op, "table");
  const uint64_t n = static_cast<uint64_t>(x.numel());
  if (!fits(n) || !fits(static_cast<uint64_t>(table.numel()))) {
    note_fallback("rope: " + shape_str(x.shape) + " exceeds one storage-buffer binding; ran on "
                  "the host");
    return Backend::rope(x, table, args);
  }
  DTensor out = make(x.shape);
  if (n == 0) return out;
  const GpuBuffer& by = buf(out, op, "output");
  rec_->access({&bx, &bt}, {&by});
  RopePC pc{};
  pc.rows = static_cast<uint32_t>(x.shape[0]);
  pc.heads = static_cast<uint32_t>(args.heads);
  pc.dh = static_cast<uint32_t>(x.shape[1] / args.heads);
  pc.rotary = static_cast<uint32_t>(args.rotary_dims);
  pc.adjacent = args.adjacent_pairs ? 1u : 0u;
  const uint64_t groups = std::min<uint64_t>((n + 127) / 128, uint64_t(kMaxWorkgroups));
  rec_->dispatch(pipes_->get(ShaderId::Rope),
                 {whole(bx, n), whole(bt, std::max<uint64_t>(1, table.numel())), whole(by, n)}, pc,
                 static_cast<uint32_t>(groups));
  return out;
}

DTensor VulkanBackend::repeat_heads(const DTensor& x, int64_t groups, int64_t d_head) {
  const char* op = "repeat_heads";
  const GpuBuffer& bx = buf(x, op, "x");
  if (x.shape.size() != 2 || groups < 1 || d_head < 1 || x.shape[1] % d_head != 0)
    throw AtlasError("repeat_heads: " + shape_str(x.shape) + " is not rows of heads of " +
                     std::to_string(d_head));
  if (groups == 1) return x;
  const int64_t L = x.shape[0], kv = x.shape[1] / d_head;
  const uint64_t n = static_cast<uint64_t>(L * kv * groups * d_head);
  if (!fits(n)) {
    note_fallback("repeat_heads: " + shape_str(x.shape) + " x " + std::to_string(groups) +
                  " exceeds one storage-buffer binding; ran on the host");
    return Backend::repeat_heads(x, groups, d_head);
  }
  DTensor out = make({L, kv * groups * d_head});
  if (n == 0) return out;
  const GpuBuffer& by = buf(out, op, "output");
  rec_->access({&bx}, {&by});
  const RepeatHeadsPC pc{static_cast<uint32_t>(L), static_cast<uint32_t>(kv),
                         static_cast<uint32_t>(groups), static_cast<uint32_t>(d_head)};
  const uint64_t workgroups = std::min<uint64_t>((n + 127) / 128, uint64_t(kMaxWorkgroups));
  rec_->dispatch(pipes_->get(ShaderId::RepeatHeads),
                 {whole(bx, static_cast<uint64_t>(x.numel())), whole(by, n)}, pc,
                 static_cast<uint32_t>(workgroups));
  return out;
}

}  // namespace atlas::vk
