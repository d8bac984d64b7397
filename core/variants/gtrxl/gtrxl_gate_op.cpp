// The gtrxl_gate op (core/backend/backend.h, GateArgs): shape checks and the Backend default, which
// runs the host reference apply_gate (core/variants/gtrxl/gtrxl.cpp).
#include "core/variants/gtrxl/gtrxl_gate_op.h"

#include "core/tensor/error.h"
#include "core/variants/gtrxl/gtrxl.h"

namespace atlas {

namespace {

bool uses_bias(GateType t) { return t == GateType::Output || t == GateType::Highway || t == GateType::Gru; }

// A [d, d] map of the gate: its name, its device handle in GateArgs, its host slot in GateWeights.
struct WeightSlot {
  const char* name;
  DTensor GateArgs::*device;
  Mat GateWeights::*host;
};

std::vector<WeightSlot> square_weights(GateType t) {
  if (t == GateType::Gru)
    return {{"w_r", &GateArgs::w_r, &GateWeights::w_r}, {"u_r", &GateArgs::u_r, &GateWeights::u_r},
            {"w_z", &GateArgs::w_z, &GateWeights::w_z}, {"u_z", &GateArgs::u_z, &GateWeights::u_z},
            {"w_g", &GateArgs::w_g, &GateWeights::w_g}, {"u_g", &GateArgs::u_g, &GateWeights::u_g}};
  if (t == GateType::None) return {};
  return {{"w_g", &GateArgs::w_g, &GateWeights::w_g}};
}

}  // namespace

void check_gate_shapes(const Shape& x, const Shape& y, const GateArgs& args) {
  if (x.size() != 2 || x != y)
    throw AtlasError("gtrxl_gate: the residual stream " + shape_str(x) + " and the sub-layer output " +
                     shape_str(y) + " must be matrices of one shape");
  const int64_t d = x[1];
  for (const WeightSlot& w : square_weights(args.type))
    if ((args.*w.device).shape != Shape{d, d})
      throw AtlasError(std::string("gtrxl_gate: ") + w.name + " must be " + shape_str({d, d}) + ", got " +
                       shape_str((args.*w.device).shape));
  if (uses_bias(args.type) && args.b_g.shape != Shape{d})
    throw AtlasError("gtrxl_gate: b_g must be " + shape_str({d}) + ", got " + shape_str(args.b_g.shape));
}

GateResult Backend::gtrxl_gate(const DTensor& x, const DTensor& y, const GateArgs& args) {
  check_gate_shapes(x.shape, y.shape, args);
  note_host_compute(Op::GtrxlGate);
  std::vector<DTensor> in = {x, y};
  const std::vector<WeightSlot> slots = square_weights(args.type);
  for (const WeightSlot& w : slots) in.push_back(args.*w.device);
  if (uses_bias(args.type)) in.push_back(args.b_g);
  const std::vector<Tensor> host = download_all(in);
  GateWeights w;
  size_t next = 2;
  for (const WeightSlot& slot : slots) w.*slot.host = host[next++].mat();
  if (uses_bias(args.type))
    w.b_g = Eigen::Map<const Eigen::RowVectorXf>(host[next].data.data(), Eigen::Index(host[next].data.size()));
  Mat yy = host[1].mat();
  if (args.relu_y) yy = yy.cwiseMax(0.0f);
  std::vector<GateActivation> acts;
  const Mat out = apply_gate(args.type, w, host[0].mat(), yy, &acts);
  GateResult r;
  r.out = upload(Tensor::from_mat(out));
  if (!acts.empty()) r.gate = upload(Tensor::from_mat(acts[0].value));
  if (acts.size() > 1) r.z = upload(Tensor::from_mat(acts[1].value));
  return r;
}

}  // namespace atlas
