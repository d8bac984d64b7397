// GTrXL gating layers (Parisotto et al. 2019, eqs. 10-14; seed 001 section 3, seed 000
// "Stabilization for RL"; REFERENCES.md "GTrXL"). Seed 001 prints the input, output and
// highway gates as sigma(W_g) without an argument; the paper and REFERENCES.md apply W_g to the
// residual stream x, which is what is implemented. b_g is a learned vector per gate (as in
// DI-engine's GRUGatingUnit), initialised to gating.bias_init (the paper's b_g = 2), so that
// with small weights z = sigma(-b_g) ~ 0.12 and the GRU gate starts near the identity map x.
#include "core/variants/gtrxl/gtrxl.h"

#include <cmath>

#include "core/model/forward_pass.h"
#include "core/tensor/sigmoid.h"
#include "core/variants/gtrxl/gate_arrays.h"
#include "core/variants/gtrxl/gtrxl_gate.h"

namespace atlas {

namespace {

Mat sigmoid_each(const Mat& a) { return a.unaryExpr([](float v) { return sigmoid(v); }); }

Mat times_t(const Mat& v, const Mat& w) { return v * w.transpose(); }  // W v per row

Mat add_row(Mat a, const Eigen::RowVectorXf& b, float sign) {
  a.rowwise() += sign * b;
  return a;
}

bool has_bias(GateType t) { return t == GateType::Output || t == GateType::Highway || t == GateType::Gru; }

const char* sublayer_trace_name(GatedSublayer s) { return s == GatedSublayer::Attention ? "attn" : "ffn"; }

const char* gate_meaning(const std::string& g) {
  if (g == "input") return "GTrXL input gate sigma(W_g x), weight on the residual stream x [Lq, d_model]";
  if (g == "output") return "GTrXL output gate sigma(W_g x - b_g), weight on the sub-layer output y [Lq, d_model]";
  if (g == "highway") return "GTrXL highway gate sigma(W_g x + b_g), weight on x (1 - it on y) [Lq, d_model]";
  if (g == "r") return "GTrXL GRU reset gate r = sigma(W_r y + U_r x) [Lq, d_model]";
  return "GTrXL GRU update gate z = sigma(W_z y + U_z x - b_g); 0 = keep x [Lq, d_model]";
}

}  // namespace

std::string gate_tensor_prefix(int64_t layer, GatedSublayer s) {
  return "decoder.layer" + std::to_string(layer) +
         (s == GatedSublayer::Attention ? ".self_attn_gate" : ".ffn_gate");
}

void append_gtrxl_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  const GateType t = c.gating()->type;
  if (t == GateType::None) return;
  const int64_t d = c.d_model;
  for (int64_t l = 0; l < c.n_layers; ++l)
    for (GatedSublayer s : {GatedSublayer::Attention, GatedSublayer::Ffn}) {
      const std::string p = gate_tensor_prefix(l, s);
      if (t == GateType::Gru)
        for (const char* n : {".w_r", ".u_r", ".w_z", ".u_z", ".w_g", ".u_g"}) specs.push_back({p + n, {d, d}});
      else
        specs.push_back({p + ".w_g", {d, d}});
      if (has_bias(t)) specs.push_back({p + ".b_g", {d}, InitKind::Constant, c.gating()->bias_init});
    }
}

std::vector<std::string> gate_activation_names(GateType type) {
  switch (type) {
    case GateType::None: return {};
    case GateType::Input: return {"input"};
    case GateType::Output: return {"output"};
    case GateType::Highway: return {"highway"};
    case GateType::Gru: return {"r", "z"};
  }
  return {};
}

Mat apply_gate(GateType type, const GateWeights& w, const Mat& x, const Mat& y,
               std::vector<GateActivation>* activations) {
  auto record = [&](const char* name, const Mat& v) {
    if (activations) activations->push_back({name, v});
  };
  switch (type) {
    case GateType::None: return x + y;
    case GateType::Input: {
      const Mat gi = sigmoid_each(times_t(x, w.w_g));
      record("input", gi);
      return gi.cwiseProduct(x) + y;
    }
    case GateType::Output: {
      const Mat go = sigmoid_each(add_row(times_t(x, w.w_g), w.b_g, -1.0f));
      record("output", go);
      return x + go.cwiseProduct(y);
    }
    case GateType::Highway: {
      const Mat gh = sigmoid_each(add_row(times_t(x, w.w_g), w.b_g, 1.0f));
      record("highway", gh);
      return gh.cwiseProduct(x) + (Mat::Ones(x.rows(), x.cols()) - gh).cwiseProduct(y);
    }
    case GateType::Gru: {
      const Mat r = sigmoid_each(times_t(y, w.w_r) + times_t(x, w.u_r));
      const Mat z = sigmoid_each(add_row(times_t(y, w.w_z) + times_t(x, w.u_z), w.b_g, -1.0f));
      const Mat h = (times_t(y, w.w_g) + times_t(r.cwiseProduct(x), w.u_g)).array().tanh().matrix();
      record("r", r);
      record("z", z);
      return (Mat::Ones(x.rows(), x.cols()) - z).cwiseProduct(x) + z.cwiseProduct(h);
    }
  }
  return x + y;
}

DTensor gtrxl_combine(ForwardPass& pass, const DTensor& x, const DTensor& y, int64_t layer,
                      int64_t seg, GatedSublayer sublayer) {
  const GatingConfig& g = *pass.config().gating();
  GateArgs args;
  args.type = g.type;
  // The reordering leaves two linear maps in a row on the identity path; the paper adds a ReLU
  // on the sub-layer output before the gate (eq. 10).
  args.relu_y = g.identity_map_reorder;
  const std::string p = gate_tensor_prefix(layer, sublayer);
  if (g.type == GateType::Gru) {
    args.w_r = pass.weight(p + ".w_r");
    args.u_r = pass.weight(p + ".u_r");
    args.w_z = pass.weight(p + ".w_z");
    args.u_z = pass.weight(p + ".u_z");
    args.u_g = pass.weight(p + ".u_g");
  }
  if (g.type != GateType::None) args.w_g = pass.weight(p + ".w_g");
  if (has_bias(g.type)) args.b_g = pass.weight(p + ".b_g");
  const GateResult r = gtrxl_gate(pass.backend(), x, y, args);  // host reference: apply_gate
  const std::vector<std::string> gates = gate_activation_names(g.type);
  for (size_t i = 0; i < gates.size(); ++i)
    pass.trace_later(gate_arrays::name_of({"decoder", seg, layer, sublayer_trace_name(sublayer), gates[i]}),
                     gate_meaning(gates[i]), i == 0 ? r.gate : r.z);
  return r.out;
}

}  // namespace atlas
