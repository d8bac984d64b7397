// The gtrxl_gate module op (gtrxl_gate.h): shape checks, its host reference over apply_gate
// (core/variants/gtrxl/gtrxl.cpp) and its call on a backend.
#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/gtrxl/gtrxl_gate.h"

namespace atlas {

namespace {

// A [d, d] map of the gate: its name, its device handle in GateArgs, its host slot in GateWeights.
struct WeightSlot {
  const char* name;
  DTensor GateArgs::*device;
  Mat GateWeights::*host;
};

// The maps of a gate type, in the op's input order.
std::vector<WeightSlot> square_weights(GateType t) {
  if (t == GateType::Gru)
    return {{"w_r", &GateArgs::w_r, &GateWeights::w_r}, {"u_r", &GateArgs::u_r, &GateWeights::u_r},
            {"w_z", &GateArgs::w_z, &GateWeights::w_z}, {"u_z", &GateArgs::u_z, &GateWeights::u_z},
            {"w_g", &GateArgs::w_g, &GateWeights::w_g}, {"u_g", &GateArgs::u_g, &GateWeights::u_g}};
  if (t == GateType::None) return {};
  return {{"w_g", &GateArgs::w_g, &GateWeights::w_g}};
}

std::vector<Tensor> gtrxl_gate_on_host(const std::vector<Tensor>& in, const GateOpArgs& args) {
  GateWeights w;
  size_t next = 2;
  for (const WeightSlot& slot : square_weights(args.type)) w.*slot.host = in.at(next++).mat();
  if (gate_has_bias(args.type)) {
    const Tensor& b = in.at(next);
    w.b_g = Eigen::Map<const Eigen::RowVectorXf>(b.data.data(), Eigen::Index(b.data.size()));
  }
  Mat y = in.at(1).mat();
  if (args.relu_y) y = y.cwiseMax(0.0f);
  std::vector<GateActivation> acts;
  std::vector<Tensor> out = {Tensor::from_mat(apply_gate(args.type, w, in.at(0).mat(), y, &acts))};
  for (const GateActivation& a : acts) out.push_back(Tensor::from_mat(a.value));
  return out;
}

bool uses_gates(const ModelConfig& c) { return c.gating() && c.gating()->type != GateType::None; }

constexpr ModuleOpOf<GateOpArgs> kGtrxlGate = module_op<GateOpArgs, gtrxl_gate_on_host>(
    "gtrxl_gate", "GTrXL gating layers computed on the host", uses_gates);
const RegisterModuleOp kRegisterGtrxlGate(kGtrxlGate.op);

}  // namespace

const ModuleOp& gtrxl_gate_op() { return kGtrxlGate.op; }

void check_gate_shapes(const Shape& x, const Shape& y, const GateArgs& args) {
  if (x.size() != 2 || x != y)
    throw AtlasError("gtrxl_gate: the residual stream " + shape_str(x) + " and the sub-layer output " +
                     shape_str(y) + " must be matrices of one shape");
  const int64_t d = x[1];
  for (const WeightSlot& w : square_weights(args.type))
    if ((args.*w.device).shape != Shape{d, d})
      throw AtlasError(std::string("gtrxl_gate: ") + w.name + " must be " + shape_str({d, d}) + ", got " +
                       shape_str((args.*w.device).shape));
  if (gate_has_bias(args.type) && args.b_g.shape != Shape{d})
    throw AtlasError("gtrxl_gate: b_g must be " + shape_str({d}) + ", got " + shape_str(args.b_g.shape));
}

GateResult gtrxl_gate(Backend& be, const DTensor& x, const DTensor& y, const GateArgs& args) {
  check_gate_shapes(x.shape, y.shape, args);
  std::vector<DTensor> in = {x, y};
  for (const WeightSlot& w : square_weights(args.type)) in.push_back(args.*w.device);
  if (gate_has_bias(args.type)) in.push_back(args.b_g);
  const std::vector<DTensor> out = run_op(be, kGtrxlGate, in, GateOpArgs{args.type, args.relu_y});
  GateResult r;
  r.out = out.at(0);
  if (out.size() > 1) r.gate = out[1];
  if (out.size() > 2) r.z = out[2];
  return r;
}

}  // namespace atlas
