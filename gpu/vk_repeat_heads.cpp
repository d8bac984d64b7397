// Grouped-query heads (shaders/repeat_heads.comp) on the device: one dispatch per call, so the
// keys and values of a Llama-family layer are widened without reading anything back.
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

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
