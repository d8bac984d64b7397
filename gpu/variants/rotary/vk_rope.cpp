// The Vulkan kernel of the rope op (core/variants/rotary/rope.h): one dispatch of rope.comp per
// call, so a Llama-family layer's queries and keys are rotated without reading anything back.
#include <algorithm>

#include "core/variants/rotary/rope.h"
#include "gpu/variant_kernel.h"
#include "rope_spv.h"

namespace atlas::vk::variants {

namespace {

// rope.comp's push constants: one invocation per element of x [rows, heads * dh]; adjacent 1
// pairs (2i, 2i + 1), 0 pairs (i, i + rotary / 2).
struct RopePC {
  uint32_t rows, heads, dh, rotary, adjacent;
};
static_assert(sizeof(RopePC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

const ShaderSpec kRopeShader = ATLAS_SHADER_SPEC(rope, 3, RopePC);

// Inputs {x, table} after apply_rope's shape check.
std::vector<DTensor> run_rope(KernelApi& api, const std::vector<DTensor>& in, const void* a) {
  const RopeArgs& args = *static_cast<const RopeArgs*>(a);
  const DTensor& x = in.at(0);
  const DTensor& table = in.at(1);
  const char* op = "rope";
  const GpuBuffer& bx = api.buffer(x, op, "x");
  const GpuBuffer& bt = api.buffer(table, op, "table");
  const uint64_t n = static_cast<uint64_t>(x.numel());
  if (!api.fits(n) || !api.fits(static_cast<uint64_t>(table.numel())))
    return api.on_host(rope_op(), in, a,
                       "rope: " + shape_str(x.shape) +
                           " exceeds one storage-buffer binding; ran on the host");
  DTensor out = api.make(x.shape);
  if (n == 0) return {out};
  const GpuBuffer& by = api.buffer(out, op, "output");
  api.recorder().access({&bx, &bt}, {&by});
  RopePC pc{};
  pc.rows = static_cast<uint32_t>(x.shape[0]);
  pc.heads = static_cast<uint32_t>(args.heads);
  pc.dh = static_cast<uint32_t>(x.shape[1] / args.heads);
  pc.rotary = static_cast<uint32_t>(args.rotary_dims);
  pc.adjacent = args.adjacent_pairs ? 1u : 0u;
  const uint64_t groups = std::min<uint64_t>((n + 127) / 128, uint64_t(kMaxWorkgroups));
  api.recorder().dispatch(
      api.pipeline(kRopeShader),
      {api.whole(bx, n), api.whole(bt, std::max<uint64_t>(1, table.numel())), api.whole(by, n)}, pc,
      static_cast<uint32_t>(groups));
  return {out};
}

}  // namespace

std::vector<const VariantKernel*> rotary_kernels() {
  static const VariantKernel rope{rope_op(), run_rope};
  return {&rope};
}

}  // namespace atlas::vk::variants
