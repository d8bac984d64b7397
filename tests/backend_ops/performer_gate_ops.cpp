// Test cases of performer_attention and gtrxl_gate (op_case.h).
// performer_attention: odd sizes, feature counts not a multiple of the workgroup, padding,
// causal and bidirectional (the linear-time path and the per-row path that also writes the
// implicit attention); reference: favor_attention / favor_implicit_attention per head
// (core/variants/performer/performer.h); bounds against the exact value (inputs and features
// in [-1, 1], d_head <= 9, m <= 130): output 2e-5, implicit attention 2e-6, twice those
// against the float host reference.
// gtrxl_gate: every gate type with and without the reordering's ReLU; reference apply_gate
// (core/variants/gtrxl/gtrxl.h); gates and output 2e-6 against the exact value (inputs in
// [-1, 1], weights in [-0.3, 0.3], d <= 65), 4e-6 against the reference.
#include <cmath>

#include "core/backend/op_registry.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/gtrxl/gtrxl_gate.h"
#include "core/variants/performer/performer.h"
#include "core/variants/performer/performer_attention.h"
#include "core/variants/performer/train_performer.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

// ---- performer_attention ------------------------------------------------------------------
struct PerformerShape {
  const char* name;
  int64_t lq, lk, heads, dk, m;
  bool causal, padding, implicit;
};
struct PerformerIn {
  Tensor q, k, v, w;
  PerformerArgs args;
};

const Register performer_case(make_case(OpTest<PerformerShape, PerformerIn>{
    performer_attention_op(),
    {"out", "implicit"},
    {
        // name                      lq  lk  H  dk   m  causal pad   implicit
        {"1x1", 1, 1, 1, 1, 1, false, false, false},
        {"bidirectional kv path", 13, 13, 3, 5, 70, false, false, false},
        {"bidirectional padded", 17, 17, 2, 7, 16, false, true, false},
        {"cross lengths", 9, 23, 2, 6, 33, false, true, false},
        {"bidirectional implicit", 11, 11, 2, 9, 65, false, true, true},
        {"causal", 29, 29, 2, 4, 24, true, false, false},
        {"causal padded implicit", 15, 15, 3, 8, 40, true, true, true},
        {"long bidirectional", 129, 129, 1, 8, 128, false, true, false},
        {"long causal implicit", 65, 65, 1, 4, 64, true, false, true},
    },
    [](const PerformerShape& s) {
      return std::string(s.name) + " " + dims({s.lq, s.lk}) + " H " + std::to_string(s.heads) + " dk " +
             std::to_string(s.dk) + " m " + std::to_string(s.m);
    },
    [](const PerformerShape& c, uint32_t seed) {
      PerformerIn in{random_tensor({c.lq, c.heads * c.dk}, seed), random_tensor({c.lk, c.heads * c.dk}, seed + 1),
                     random_tensor({c.lk, c.heads * c.dk}, seed + 2), random_tensor({c.heads, c.m, c.dk}, seed + 3), {}};
      in.args.heads = int(c.heads);
      in.args.causal = c.causal;
      in.args.want_implicit = c.implicit;
      if (c.padding) {
        in.args.key_valid.assign(size_t(c.lk), 1);
        in.args.key_valid[size_t(c.lk - 1)] = 0;
        if (c.lk > 3) in.args.key_valid[size_t(c.lk / 2)] = 0;
      }
      return in;
    },
    [](Backend& be, const PerformerIn& in) {
      const PerformerResult r = performer_attention(be, be.upload(in.q), be.upload(in.k),
                                                    be.upload(in.v), be.upload(in.w), in.args);
      return std::vector<Tensor>{be.download(r.out), download_or_absent(be, r.implicit)};
    },
    [](const PerformerIn& in) {
      const int64_t H = in.args.heads, lq = in.q.shape[0], lk = in.k.shape[0], dk = in.q.shape[1] / H,
                    dv = in.v.shape[1] / H, m = in.w.shape[1];
      Tensor out({lq, H * dv}), implicit({H, lq, lk});
      for (int64_t h = 0; h < H; ++h) {
        const Mat w = Eigen::Map<const Mat>(in.w.data.data() + h * m * dk, m, dk);
        const Mat qh = in.q.mat().middleCols(h * dk, dk), kh = in.k.mat().middleCols(h * dk, dk),
                  vh = in.v.mat().middleCols(h * dv, dv);
        out.mat().middleCols(h * dv, dv) = favor_attention(qh, kh, vh, w, in.args.causal, in.args.key_valid);
        const Mat a = favor_implicit_attention(qh, kh, w, in.args.causal, in.args.key_valid);
        std::copy(a.data(), a.data() + lq * lk, implicit.data.begin() + h * lq * lk);
      }
      return std::vector<Want>{want_of(out), in.args.want_implicit ? want_of(implicit) : want_absent()};
    },
    [](const PerformerIn&, size_t output, const std::vector<double>& want) {
      return uniform_tol(want.size(), output == 0 ? 4e-5 : 4e-6);
    },
    [](const PerformerIn& in) -> std::optional<TapeOp> {  // features are constants, not trained
      const int64_t H = in.args.heads, m = in.w.shape[1], dk = in.w.shape[2];
      std::vector<Mat> features;
      for (int64_t h = 0; h < H; ++h)
        features.push_back(Eigen::Map<const Mat>(in.w.data.data() + h * m * dk, m, dk));
      train::AttentionSpec<double> spec;
      spec.heads = int(H);
      spec.causal = in.args.causal;
      spec.key_valid = in.args.key_valid;
      return TapeOp{{{"q", to_mat(in.q)}, {"k", to_mat(in.k)}, {"v", to_mat(in.v)}},
                    [features, spec](train::Tape<double>& t, const train::ParamsT<double>& p) {
                      auto P = [&](const char* n) { return t.param(n, p.at(n)); };
                      return train::performer_attention(t, P("q"), P("k"), P("v"), features, spec);
                    }};
    }}));

// ---- gtrxl_gate ---------------------------------------------------------------------------
struct GateShape {
  GateType type;
  bool relu;
  int64_t L, d;
};
struct GateIn {
  Tensor x, y, w_r, u_r, w_z, u_z, w_g, u_g, b_g;
  GateType type;
  bool relu;
};

const char* gate_name(GateType t) {
  switch (t) {
    case GateType::Input: return "input";
    case GateType::Output: return "output";
    case GateType::Highway: return "highway";
    case GateType::Gru: return "gru";
    default: return "none";
  }
}

std::vector<GateShape> gate_shapes() {
  std::vector<GateShape> out;
  for (GateType t : {GateType::None, GateType::Input, GateType::Output, GateType::Highway, GateType::Gru})
    for (bool relu : {false, true})
      for (auto [L, d] : {std::pair<int64_t, int64_t>{1, 1}, {9, 37}, {65, 3}, {3, 65}}) out.push_back({t, relu, L, d});
  return out;
}

bool uses_bias(GateType t) { return t == GateType::Output || t == GateType::Highway || t == GateType::Gru; }

const Register gate_case(make_case(OpTest<GateShape, GateIn>{
    gtrxl_gate_op(),
    {"out", "gate", "z"},
    gate_shapes(),
    [](const GateShape& s) {
      return std::string(gate_name(s.type)) + (s.relu ? " relu " : " ") + dims({s.L, s.d});
    },
    [](const GateShape& s, uint32_t seed) {
      auto w = [&](uint32_t i) { return random_tensor({s.d, s.d}, seed + i, -0.3f, 0.3f); };
      return GateIn{random_tensor({s.L, s.d}, seed), random_tensor({s.L, s.d}, seed + 1), w(2), w(3), w(4), w(5), w(6),
                    w(7), random_tensor({s.d}, seed + 8, 1.0f, 2.5f), s.type, s.relu};
    },
    [](Backend& be, const GateIn& in) {
      GateArgs a;
      a.type = in.type;
      a.relu_y = in.relu;
      if (in.type == GateType::Gru) {
        a.w_r = be.upload(in.w_r), a.u_r = be.upload(in.u_r), a.w_z = be.upload(in.w_z), a.u_z = be.upload(in.u_z);
        a.u_g = be.upload(in.u_g);
      }
      if (in.type != GateType::None) a.w_g = be.upload(in.w_g);
      if (uses_bias(in.type)) a.b_g = be.upload(in.b_g);
      const GateResult r = gtrxl_gate(be, be.upload(in.x), be.upload(in.y), a);
      return std::vector<Tensor>{be.download(r.out), download_or_absent(be, r.gate), download_or_absent(be, r.z)};
    },
    [](const GateIn& in) {
      GateWeights w;
      w.w_r = in.w_r.mat(), w.u_r = in.u_r.mat(), w.w_z = in.w_z.mat(), w.u_z = in.u_z.mat();
      w.w_g = in.w_g.mat(), w.u_g = in.u_g.mat();
      w.b_g = Eigen::Map<const Eigen::RowVectorXf>(in.b_g.data.data(), Eigen::Index(in.b_g.data.size()));
      Mat y = in.y.mat();
      if (in.relu) y = y.cwiseMax(0.0f);
      std::vector<GateActivation> acts;
      const Mat out = apply_gate(in.type, w, in.x.mat(), y, &acts);
      std::vector<Want> want{want_of(Tensor::from_mat(out)), want_absent(), want_absent()};
      for (size_t i = 0; i < acts.size() && i < 2; ++i)
        want[i + 1] = want_of(Tensor::from_mat(acts[i].value));
      return want;
    },
    [](const GateIn&, size_t, const std::vector<double>& want) {
      return uniform_tol(want.size(), 4e-6);
    },
    {}}));

}  // namespace
}  // namespace atlas::op_test
