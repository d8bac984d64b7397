// One ACT step on the device (shaders/act_step.comp): the halting update, the weighted output
// and the next step's state in one elementwise dispatch, so a Universal Transformer's ponder
// loop only reads back the [L, 4] halting state once per step to decide whether to go on.
#include <algorithm>

#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"
#include "core/variants/transformer_xl/xl_act_ops.h"

namespace atlas::vk {

ActStepResult VulkanBackend::act_step(const ActState& current, const DTensor& logit,
                                      const DTensor& step_out, const ActStepArgs& args) {
  const char* op = "act_step";
  const GpuBuffer& bh = buf(current.halting, op, "halting state");
  const GpuBuffer& by = buf(current.y, op, "ACT output");
  const GpuBuffer& bs = buf(current.state, op, "step input state");
  const GpuBuffer& bl = buf(logit, op, "halting logits");
  const GpuBuffer& bt = buf(step_out, op, "step output");
  check_act_step_shapes(current.halting.shape, current.y.shape, current.state.shape, logit.shape,
                        step_out.shape);
  const int64_t L = current.y.shape[0], d = current.y.shape[1];
  const uint64_t invocations = static_cast<uint64_t>(L * std::max<int64_t>(d, 1));
  const uint64_t groups = (invocations + 127) / 128;
  if (groups > uint64_t(kMaxWorkgroups) || !fits(static_cast<uint64_t>(L * d)) || !fits(static_cast<uint64_t>(L * 4))) {
    note_fallback("act_step: " + shape_str(current.y.shape) + " exceeds the kernel's limits (one "
                  "storage-buffer binding per tensor, 65535 x 128 invocations); ran on the host");
    return Backend::act_step(current, logit, step_out, args);
  }

  ActStepResult r{{make({L, 4}), make({L, d}), make({L, d})}, make({L, 2})};
  if (L == 0) return r;
  const GpuBuffer& bho = buf(r.next.halting, op, "next halting state");
  const GpuBuffer& byo = buf(r.next.y, op, "next ACT output");
  const GpuBuffer& bso = buf(r.next.state, op, "next state");
  const GpuBuffer& bw = buf(r.weights, op, "weights");
  rec_->access({&bh, &by, &bs, &bl, &bt}, {&bho, &byo, &bso, &bw});
  const std::vector<Binding> bindings = {
      whole(bh, L * 4), whole(by, L * d),  whole(bs, L * d),  whole(bl, L),   whole(bt, L * d),
      whole(bho, L * 4), whole(byo, L * d), whole(bso, L * d), whole(bw, L * 2)};
  ActStepPC pc{};
  pc.rows = static_cast<uint32_t>(L);
  pc.d = static_cast<uint32_t>(d);
  pc.flags = (args.last_step ? kActLastStep : 0u) | (args.interpolate ? kActInterpolate : 0u);
  pc.threshold = args.threshold;
  rec_->dispatch(pipes_->get(ShaderId::ActStep), bindings, pc, static_cast<uint32_t>(groups));
  return r;
}

}  // namespace atlas::vk
