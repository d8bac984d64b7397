// GTrXL gates on the device: the [d, d] maps through the backend's linear op, the sigmoids,
// tanh and mixing in shaders/gtrxl_gate.comp (one elementwise dispatch, two for GRU), so a
// gated XL forward reads nothing back between sub-layers.
#include "core/variants/gtrxl/gtrxl_gate_op.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {
enum GateMode : uint32_t { kInput = 0, kOutput = 1, kHighway = 2, kGruRz = 3, kGruOut = 4 };
}  // namespace

GateResult VulkanBackend::gtrxl_gate(const DTensor& x, const DTensor& y_in, const GateArgs& args) {
  const char* op = "gtrxl_gate";
  buf(x, op, "residual stream");
  buf(y_in, op, "sub-layer output");
  check_gate_shapes(x.shape, y_in.shape, args);
  const int64_t L = x.shape[0], d = x.shape[1];
  const uint64_t n = static_cast<uint64_t>(L * d), groups = (n + 127) / 128;
  if (groups > uint64_t(kMaxWorkgroups) || !fits(n) || !fits(static_cast<uint64_t>(d * d))) {
    note_fallback("gtrxl_gate: " + shape_str(x.shape) + " exceeds the kernel's limits (one "
                  "storage-buffer binding per tensor, 65535 x 128 invocations); ran on the host");
    return Backend::gtrxl_gate(x, y_in, args);
  }
  const DTensor y = args.relu_y ? activation(y_in, Activation::ReLU) : y_in;
  GateResult r;
  if (args.type == GateType::None) {
    r.out = add(x, y);
    return r;
  }
  if (n == 0) {
    r.out = make({L, d});
    r.gate = make({L, d});
    if (args.type == GateType::Gru) r.z = make({L, d});
    return r;
  }

  std::shared_ptr<GpuBuffer> sink = ctx_->acquire(BufferKind::Device, 256);
  // One elementwise dispatch; absent inputs read the dummy, absent outputs write the sink.
  auto run = [&](GateMode mode, std::initializer_list<const DTensor*> a, const DTensor* z_in,
                 const DTensor* out, const DTensor* gate, const DTensor* z_out, const DTensor* rx) {
    const DTensor* as[4] = {nullptr, nullptr, nullptr, nullptr};
    size_t next = 0;
    for (const DTensor* t : a) as[next++] = t;
    auto in = [&](const DTensor* t, const char* what) -> const GpuBuffer& { return t ? buf(*t, op, what) : *dummy_; };
    auto outb = [&](const DTensor* t, const char* what) -> const GpuBuffer& { return t ? buf(*t, op, what) : *sink; };
    const GpuBuffer &bx = buf(x, op, "x"), &by = buf(y, op, "y");
    const GpuBuffer &b0 = in(as[0], "a0"), &b1 = in(as[1], "a1"), &b2 = in(as[2], "a2"), &b3 = in(as[3], "a3");
    const bool bias = mode == kOutput || mode == kHighway || mode == kGruRz;
    const GpuBuffer& bb = bias ? buf(args.b_g, op, "b_g") : *dummy_;
    const GpuBuffer& bz = in(z_in, "z");
    const GpuBuffer &bo = outb(out, "output"), &bg = outb(gate, "gate"), &bzo = outb(z_out, "z"),
                    &brx = outb(rx, "r x");
    rec_->access({&bx, &by, &b0, &b1, &b2, &b3, &bb, &bz}, {&bo, &bg, &bzo, &brx});
    auto span = [&](const void* t) { return t ? n : 1; };
    const std::vector<Binding> bindings = {
        whole(bx, n),         whole(by, n),          whole(b0, span(as[0])), whole(b1, span(as[1])),
        whole(b2, span(as[2])), whole(b3, span(as[3])), whole(bb, bias ? d : 1), whole(bz, span(z_in)),
        whole(bo, span(out)),  whole(bg, span(gate)),  whole(bzo, span(z_out)), whole(brx, span(rx))};
    GtrxlGatePC pc{};
    pc.n = static_cast<uint32_t>(n);
    pc.d = static_cast<uint32_t>(d);
    pc.mode = mode;
    rec_->dispatch(pipes_->get(ShaderId::GtrxlGate), bindings, pc, static_cast<uint32_t>(groups));
  };

  r.out = make({L, d});
  r.gate = make({L, d});
  if (args.type != GateType::Gru) {
    const DTensor a0 = linear(x, args.w_g, {});
    const GateMode mode = args.type == GateType::Input ? kInput : args.type == GateType::Output ? kOutput : kHighway;
    run(mode, {&a0}, nullptr, &r.out, &r.gate, nullptr, nullptr);
    return r;
  }
  r.z = make({L, d});
  const DTensor wr = linear(y, args.w_r, {}), ur = linear(x, args.u_r, {});
  const DTensor wz = linear(y, args.w_z, {}), uz = linear(x, args.u_z, {});
  const DTensor rx = make({L, d});
  run(kGruRz, {&wr, &ur, &wz, &uz}, nullptr, nullptr, &r.gate, &r.z, &rx);
  const DTensor wg = linear(y, args.w_g, {}), ug = linear(rx, args.u_g, {});
  run(kGruOut, {&wg, &ug}, &r.z, &r.out, nullptr, nullptr, nullptr);
  return r;
}

}  // namespace atlas::vk
