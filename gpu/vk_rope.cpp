// Rotary position embedding on the device (shaders/rope.comp): one elementwise dispatch per
// call, so rotating q and k reads nothing back.
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

}  // namespace atlas::vk
