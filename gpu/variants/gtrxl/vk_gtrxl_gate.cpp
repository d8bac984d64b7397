// The Vulkan kernel of the gtrxl_gate op (core/variants/gtrxl/gtrxl_gate.h): the [d, d] maps
// through the backend's linear op, the sigmoids, tanh and mixing in gtrxl_gate.comp (one
// elementwise dispatch, two for GRU), so a gated XL forward reads nothing back between
// sub-layers.
#include "core/variants/gtrxl/gtrxl_gate.h"
#include "gpu/variant_kernel.h"
#include "gtrxl_gate_spv.h"

namespace atlas::vk::variants {

namespace {

// gtrxl_gate.comp's push constants: one invocation per element of the [L, d] tensors; mode as
// in the shader.
enum GateMode : uint32_t { kInput = 0, kOutput = 1, kHighway = 2, kGruRz = 3, kGruOut = 4 };
struct GtrxlGatePC {
  uint32_t n, d;
  uint32_t mode;
};
static_assert(sizeof(GtrxlGatePC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

const ShaderSpec kGtrxlGateShader = ATLAS_SHADER_SPEC(gtrxl_gate, 12, GtrxlGatePC);

// Inputs {x, y, maps..., b_g} in the op's order (gtrxl_gate.h), after gtrxl_gate's shape check.
std::vector<DTensor> run_gtrxl_gate(KernelApi& api, const std::vector<DTensor>& in, const void* a) {
  const GateOpArgs& args = *static_cast<const GateOpArgs*>(a);
  const char* op = "gtrxl_gate";
  const DTensor& x = in.at(0);
  api.buffer(x, op, "residual stream");
  api.buffer(in.at(1), op, "sub-layer output");
  const int64_t L = x.shape[0], d = x.shape[1];
  const uint64_t n = static_cast<uint64_t>(L * d), groups = (n + 127) / 128;
  if (groups > uint64_t(kMaxWorkgroups) || !api.fits(n) || !api.fits(static_cast<uint64_t>(d * d)))
    return api.on_host(gtrxl_gate_op(), in, a,
                       "gtrxl_gate: " + shape_str(x.shape) +
                           " exceeds the kernel's limits (one storage-buffer binding per tensor, "
                           "65535 x 128 invocations); ran on the host");
  Backend& be = api.backend();
  const DTensor y = args.relu_y ? be.activation(in.at(1), Activation::ReLU) : in.at(1);
  if (args.type == GateType::None) return {be.add(x, y)};
  const bool gru = args.type == GateType::Gru;
  std::vector<DTensor> out = {api.make({L, d}), api.make({L, d})};
  if (gru) out.push_back(api.make({L, d}));
  if (n == 0) return out;

  const DTensor* bias = gate_has_bias(args.type) ? &in.back() : nullptr;
  // One elementwise dispatch; the inputs and outputs a mode does not use bind the placeholder.
  auto run = [&](GateMode mode, std::initializer_list<const DTensor*> operands, const DTensor* z_in,
                 const DTensor* result, const DTensor* gate, const DTensor* z_out,
                 const DTensor* rx) {
    const DTensor* as[4] = {nullptr, nullptr, nullptr, nullptr};
    size_t next = 0;
    for (const DTensor* t : operands) as[next++] = t;
    auto bind = [&](const DTensor* t, const char* what) -> const GpuBuffer& {
      return t ? api.buffer(*t, op, what) : api.placeholder();
    };
    const GpuBuffer &bx = api.buffer(x, op, "x"), &by = api.buffer(y, op, "y");
    const GpuBuffer &b0 = bind(as[0], "a0"), &b1 = bind(as[1], "a1"), &b2 = bind(as[2], "a2"),
                    &b3 = bind(as[3], "a3");
    const bool bias_used = mode == kOutput || mode == kHighway || mode == kGruRz;
    const GpuBuffer& bb = bind(bias_used ? bias : nullptr, "b_g");
    const GpuBuffer& bz = bind(z_in, "z");
    const GpuBuffer &bo = bind(result, "output"), &bg = bind(gate, "gate"), &bzo = bind(z_out, "z"),
                    &brx = bind(rx, "r x");
    api.recorder().access({&bx, &by, &b0, &b1, &b2, &b3, &bb, &bz}, {&bo, &bg, &bzo, &brx});
    auto span = [&](const DTensor* t) { return t ? n : uint64_t(1); };
    const std::vector<Binding> bindings = {api.whole(bx, n),
                                           api.whole(by, n),
                                           api.whole(b0, span(as[0])),
                                           api.whole(b1, span(as[1])),
                                           api.whole(b2, span(as[2])),
                                           api.whole(b3, span(as[3])),
                                           api.whole(bb, bias_used ? uint64_t(d) : 1),
                                           api.whole(bz, span(z_in)),
                                           api.whole(bo, span(result)),
                                           api.whole(bg, span(gate)),
                                           api.whole(bzo, span(z_out)),
                                           api.whole(brx, span(rx))};
    GtrxlGatePC pc{};
    pc.n = static_cast<uint32_t>(n);
    pc.d = static_cast<uint32_t>(d);
    pc.mode = mode;
    api.recorder().dispatch(api.pipeline(kGtrxlGateShader), bindings, pc,
                            static_cast<uint32_t>(groups));
  };

  if (!gru) {  // maps {w_g}
    const DTensor a0 = be.linear(x, in.at(2), {});
    const GateMode mode = args.type == GateType::Input    ? kInput
                          : args.type == GateType::Output ? kOutput
                                                          : kHighway;
    run(mode, {&a0}, nullptr, &out[0], &out[1], nullptr, nullptr);
    return out;
  }
  // maps {w_r, u_r, w_z, u_z, w_g, u_g}
  const DTensor &w_r = in.at(2), &u_r = in.at(3), &w_z = in.at(4), &u_z = in.at(5), &w_g = in.at(6),
                &u_g = in.at(7);
  const DTensor wr = be.linear(y, w_r, {}), ur = be.linear(x, u_r, {});
  const DTensor wz = be.linear(y, w_z, {}), uz = be.linear(x, u_z, {});
  const DTensor rx = api.make({L, d});
  run(kGruRz, {&wr, &ur, &wz, &uz}, nullptr, nullptr, &out[1], &out[2], &rx);
  const DTensor wg = be.linear(y, w_g, {}), ug = be.linear(rx, u_g, {});
  run(kGruOut, {&wg, &ug}, &out[2], &out[0], nullptr, nullptr, nullptr);
  return out;
}

}  // namespace

std::vector<const VariantKernel*> gtrxl_kernels() {
  static const VariantKernel gtrxl_gate{gtrxl_gate_op(), run_gtrxl_gate};
  return {&gtrxl_gate};
}

}  // namespace atlas::vk::variants
