// The alibi_attention module op (alibi_attention_op.h): shape checks, the host reference that
// the CPU backend runs, a backend without the kernel falls back to and the Vulkan kernel is
// tested against, and its call on a backend.
#include "core/variants/alibi/alibi_attention_op.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/alibi/alibi_slopes.h"

namespace atlas {

void check_alibi_attention_shapes(const Shape& q, const Shape& k, const Shape& v,
                                  const AlibiAttentionArgs& args) {
  const int64_t H = args.attn.heads;
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || q[1] != k[1] || q[1] % H != 0 ||
      v[1] % H != 0 || v[0] != k[0])
    throw AtlasError("alibi_attention: shapes q " + shape_str(q) + " k " + shape_str(k) + " v " +
                     shape_str(v) + " do not split into " + std::to_string(H) + " heads");
  if (static_cast<int64_t>(args.slopes.size()) != H)
    throw AtlasError("alibi_attention: " + std::to_string(args.slopes.size()) + " slopes for " +
                     std::to_string(H) + " heads (one slope per head)");
  const AttentionMask& mask = args.attn.mask;
  const int64_t lq = q[0], lk = k[0];
  if ((!mask.key_valid.empty() && int64_t(mask.key_valid.size()) != lk) ||
      (!mask.allowed.empty() && int64_t(mask.allowed.size()) != lq * lk))
    throw AtlasError("alibi_attention: mask sizes do not match " + std::to_string(lq) +
                     " queries x " + std::to_string(lk) + " keys");
}

AlibiAttentionHost alibi_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AlibiAttentionArgs& args) {
  check_alibi_attention_shapes(q.shape, k.shape, v.shape, args);
  const int64_t H = args.attn.heads;
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H, lq = q.shape[0], lk = k.shape[0];
  const AttentionMask& mask = args.attn.mask;
  const float ninf = -std::numeric_limits<float>::infinity();

  AlibiAttentionHost r{Tensor({lq, H * dv}), Tensor({H, lq, lk}), Tensor({H, lq, lk})};
  std::vector<double> w(static_cast<size_t>(lk));
  for (int64_t h = 0; h < H; ++h) {
    const float m = args.slopes[static_cast<size_t>(h)];
    const Mat qh = q.mat().block(0, h * dh, lq, dh), kh = k.mat().block(0, h * dh, lk, dh);
    const Mat vh = v.mat().block(0, h * dv, lk, dv);
    Mat e = qh * kh.transpose();  // [Lq, Lk]
    e *= args.attn.scale;
    Mat a = Mat::Zero(lq, lk);
    for (int64_t i = 0; i < lq; ++i) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < lk; ++j) {
        e(i, j) = mask.is_allowed(i, j, lk) ? e(i, j) + alibi_bias(m, i, j, lq, lk) : ninf;
        mx = std::max(mx, double(e(i, j)));
      }
      if (std::isinf(mx)) continue;  // no allowed key: a zero row
      double sum = 0.0;
      for (int64_t j = 0; j < lk; ++j) {
        w[size_t(j)] = std::isinf(e(i, j)) ? 0.0 : std::exp(double(e(i, j)) - mx);
        sum += w[size_t(j)];
      }
      for (int64_t j = 0; j < lk; ++j) a(i, j) = float(w[size_t(j)] / sum);
    }
    r.out.mat().block(0, h * dv, lq, dv) = a * vh;
    Eigen::Map<Mat>(r.probs.data.data() + h * lq * lk, lq, lk) = a;
    Eigen::Map<Mat>(r.scores.data.data() + h * lq * lk, lq, lk) = e;
  }
  return r;
}

namespace {

std::vector<Tensor> alibi_attention_on_host(const std::vector<Tensor>& in,
                                            const AlibiAttentionArgs& args) {
  AlibiAttentionHost h = alibi_attention_reference(in.at(0), in.at(1), in.at(2), args);
  std::vector<Tensor> out = {std::move(h.out)};
  if (args.attn.want_probs) out.push_back(std::move(h.probs));
  if (args.attn.want_scores) out.push_back(std::move(h.scores));
  return out;
}

bool uses_alibi_attention(const ModelConfig& c) { return alibi_of(c) != nullptr; }

constexpr ModuleOpOf<AlibiAttentionArgs> kAlibiAttention =
    module_op<AlibiAttentionArgs, alibi_attention_on_host>(
        "alibi_attention", "ALiBi attention (scores with linear distance biases, softmax) computed on the host",
        uses_alibi_attention);
const RegisterModuleOp kRegisterAlibiAttention(kAlibiAttention.op);

}  // namespace

const ModuleOp& alibi_attention_op() { return kAlibiAttention.op; }

AttentionResult alibi_attention(Backend& be, const DTensor& q, const DTensor& k,
                                const DTensor& v, const AlibiAttentionArgs& args) {
  check_alibi_attention_shapes(q.shape, k.shape, v.shape, args);
  const std::vector<DTensor> out = run_op(be, kAlibiAttention, {q, k, v}, args);
  AttentionResult r;
  size_t next = 0;
  r.out = out.at(next++);
  if (args.attn.want_probs) r.probs = out.at(next++);
  if (args.attn.want_scores) r.scores = out.at(next++);
  return r;
}

}  // namespace atlas
