// The performer_attention module op (performer_attention.h): shape checks, its host reference
// (favor_attention, positive_features head by head) and its call on a backend.
#include <algorithm>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/performer/performer.h"
#include "core/variants/performer/performer_attention.h"

namespace atlas {

void check_performer_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& features,
                            const PerformerArgs& args) {
  const int64_t H = args.heads;
  auto fail = [&](const std::string& what) {
    throw AtlasError("performer_attention: " + what + " (q " + shape_str(q) + ", k " + shape_str(k) +
                     ", v " + shape_str(v) + ", features " + shape_str(features) + ", " +
                     std::to_string(H) + " heads)");
  };
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || q[1] % H != 0 || k[1] != q[1] ||
      v[1] % H != 0 || v[0] != k[0])
    fail("q, k, v do not split into heads of one size");
  if (features.size() != 3 || features[0] != H || features[1] < 1 || features[2] != q[1] / H)
    fail("features must be [heads, m >= 1, d_head]");
  if (!args.key_valid.empty() && int64_t(args.key_valid.size()) != k[0]) fail("key_valid must have one entry per key");
  if (args.causal && q[0] != k[0]) fail("causal attention needs as many queries as keys");
}

namespace {

std::vector<Tensor> performer_attention_on_host(const std::vector<Tensor>& in,
                                                const PerformerArgs& args) {
  const int64_t H = args.heads, lq = in.at(0).shape[0], lk = in.at(1).shape[0],
                dk = in.at(0).shape[1] / H, dv = in.at(2).shape[1] / H, m = in.at(3).shape[1];
  Tensor out({lq, H * dv});
  Tensor implicit(args.want_implicit ? Shape{H, lq, lk} : Shape{0});
  ConstMatMap Q = in[0].mat(), K = in[1].mat(), V = in[2].mat();
  MatMap O = out.mat();
#pragma omp parallel for schedule(static) if (H > 1)
  for (int64_t h = 0; h < H; ++h) {
    const Mat w = Eigen::Map<const Mat>(in[3].data.data() + h * m * dk, m, dk);
    const Mat qh = Q.middleCols(h * dk, dk), kh = K.middleCols(h * dk, dk), vh = V.middleCols(h * dv, dv);
    O.middleCols(h * dv, dv) = favor_attention(qh, kh, vh, w, args.causal, args.key_valid);
    if (!args.want_implicit) continue;
    const Mat a = favor_implicit_attention(qh, kh, w, args.causal, args.key_valid);  // [Lq, Lk]
    std::copy(a.data(), a.data() + lq * lk, implicit.data.begin() + h * lq * lk);
  }
  std::vector<Tensor> r = {std::move(out)};
  if (args.want_implicit) r.push_back(std::move(implicit));
  return r;
}

bool uses_performer(const ModelConfig& c) { return c.performer() != nullptr; }

constexpr ModuleOpOf<PerformerArgs> kPerformerAttention =
    module_op<PerformerArgs, performer_attention_on_host>(
        "performer_attention",
        "Performer FAVOR+ attention (features, linear attention) computed on the host",
        uses_performer);
const RegisterModuleOp kRegisterPerformerAttention(kPerformerAttention.op);

}  // namespace

const ModuleOp& performer_attention_op() { return kPerformerAttention.op; }

PerformerResult performer_attention(Backend& be, const DTensor& q, const DTensor& k,
                                    const DTensor& v, const DTensor& features,
                                    const PerformerArgs& args) {
  check_performer_shapes(q.shape, k.shape, v.shape, features.shape, args);
  const std::vector<DTensor> out = run_op(be, kPerformerAttention, {q, k, v, features}, args);
  PerformerResult r;
  r.out = out.at(0);
  if (args.want_implicit) r.implicit = out.at(1);
  return r;
}

}  // namespace atlas
