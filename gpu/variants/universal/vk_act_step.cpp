// The Vulkan kernel of the act_step op (core/variants/universal/act_step.h): the halting
// update, the weighted output and the next step's state in one elementwise dispatch of
// act_step.comp, so a Universal Transformer's ponder loop only reads back the [L, 4] halting
// state once per step to decide whether to go on.
#include <algorithm>

#include "act_step_spv.h"
#include "core/variants/universal/act_step.h"
#include "gpu/variant_kernel.h"

namespace atlas::vk::variants {

namespace {

// act_step.comp's push constants: one invocation per (row, column) of y [rows, d].
enum : uint32_t {
  kActLastStep = 1,
  kActInterpolate = 2,
};
struct ActStepPC {
  uint32_t rows, d;
  uint32_t flags;
  float threshold;
};
static_assert(sizeof(ActStepPC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

const ShaderSpec kActStepShader = ATLAS_SHADER_SPEC(act_step, 9, ActStepPC);

// Inputs {halting, y, state, logit, step_out} after act_step's shape check.
std::vector<DTensor> run_act_step(KernelApi& api, const std::vector<DTensor>& in, const void* a) {
  const ActStepArgs& args = *static_cast<const ActStepArgs*>(a);
  const char* op = "act_step";
  const GpuBuffer& bh = api.buffer(in.at(0), op, "halting state");
  const GpuBuffer& by = api.buffer(in.at(1), op, "ACT output");
  const GpuBuffer& bs = api.buffer(in.at(2), op, "step input state");
  const GpuBuffer& bl = api.buffer(in.at(3), op, "halting logits");
  const GpuBuffer& bt = api.buffer(in.at(4), op, "step output");
  const int64_t L = in.at(1).shape[0], d = in.at(1).shape[1];
  const uint64_t invocations = static_cast<uint64_t>(L * std::max<int64_t>(d, 1));
  const uint64_t groups = (invocations + 127) / 128;
  if (groups > uint64_t(kMaxWorkgroups) || !api.fits(static_cast<uint64_t>(L * d)) ||
      !api.fits(static_cast<uint64_t>(L * 4)))
    return api.on_host(act_step_op(), in, a,
                       "act_step: " + shape_str(in.at(1).shape) +
                           " exceeds the kernel's limits (one storage-buffer binding per tensor, "
                           "65535 x 128 invocations); ran on the host");

  std::vector<DTensor> out = {api.make({L, 4}), api.make({L, d}), api.make({L, d}),
                              api.make({L, 2})};
  if (L == 0) return out;
  const GpuBuffer& bho = api.buffer(out[0], op, "next halting state");
  const GpuBuffer& byo = api.buffer(out[1], op, "next ACT output");
  const GpuBuffer& bso = api.buffer(out[2], op, "next state");
  const GpuBuffer& bw = api.buffer(out[3], op, "weights");
  api.recorder().access({&bh, &by, &bs, &bl, &bt}, {&bho, &byo, &bso, &bw});
  const uint64_t n = static_cast<uint64_t>(L * d), rows = static_cast<uint64_t>(L);
  const std::vector<Binding> bindings = {
      api.whole(bh, rows * 4), api.whole(by, n),  api.whole(bs, n),
      api.whole(bl, rows),     api.whole(bt, n),  api.whole(bho, rows * 4),
      api.whole(byo, n),       api.whole(bso, n), api.whole(bw, rows * 2)};
  ActStepPC pc{};
  pc.rows = static_cast<uint32_t>(L);
  pc.d = static_cast<uint32_t>(d);
  pc.flags = (args.last_step ? kActLastStep : 0u) | (args.interpolate ? kActInterpolate : 0u);
  pc.threshold = args.threshold;
  api.recorder().dispatch(api.pipeline(kActStepShader), bindings, pc,
                          static_cast<uint32_t>(groups));
  return out;
}

}  // namespace

std::vector<const VariantKernel*> universal_kernels() {
  static const VariantKernel act_step{act_step_op(), run_act_step};
  return {&act_step};
}

}  // namespace atlas::vk::variants
