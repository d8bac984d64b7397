// The relative_attention module op (relative_attention_op.h): shape checks, the host reference
// that the CPU backend runs, a backend without the kernel falls back to and the Vulkan kernel is
// tested against, and its call on a backend.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/adaptive_span/adaptive_span.h"
#include "core/variants/adaptive_span/span_softmax.h"
#include "core/variants/relative_attention/relative_attention.h"
#include "core/variants/relative_attention/relative_attention_op.h"
#include "core/variants/shaw/shaw.h"

namespace atlas {

void check_relative_attention_shapes(const Shape& q, const Shape& k, const Shape& v, bool shaw,
                                     const Shape& rel_k, const Shape& rel_v,
                                     const RelativeOpArgs& args) {
  const int64_t H = args.attn.heads;
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || q[1] != k[1] || q[1] % H != 0 ||
      v[1] % H != 0 || v[0] != k[0])
    throw AtlasError("relative_attention: shapes q " + shape_str(q) + " k " + shape_str(k) + " v " +
                     shape_str(v) + " do not split into " + std::to_string(H) + " heads");
  const int64_t dh = q[1] / H, dv = v[1] / H, lq = q[0], lk = k[0], kd = args.max_distance;
  if (shaw && (kd < 0 || rel_k != Shape{2 * kd + 1, dh} || rel_v != Shape{2 * kd + 1, dv}))
    throw AtlasError("relative_attention: Shaw tables " + shape_str(rel_k) + ", " +
                     shape_str(rel_v) + " are not [2k+1, d_head] = " + shape_str({2 * kd + 1, dh}) +
                     ", " + shape_str({2 * kd + 1, dv}) + " for k = " + std::to_string(kd));
  if (args.span() && static_cast<int64_t>(args.span_z.size()) != H * lq)
    throw AtlasError("relative_attention: span_z needs heads x Lq = " + std::to_string(H * lq) +
                     " values, got " + std::to_string(args.span_z.size()));
  const AttentionMask& mask = args.attn.mask;
  if ((!mask.key_valid.empty() && int64_t(mask.key_valid.size()) != lk) ||
      (!mask.allowed.empty() && int64_t(mask.allowed.size()) != lq * lk))
    throw AtlasError("relative_attention: mask sizes do not match " + std::to_string(lq) +
                     " queries x " + std::to_string(lk) + " keys");
}

RelativeAttentionHost relative_attention_reference(const Tensor& q, const Tensor& k,
                                                   const Tensor& v, const Mat& ak, const Mat& av,
                                                   const RelativeOpArgs& args) {
  const bool shaw = ak.size() > 0, span = args.span();
  check_relative_attention_shapes(q.shape, k.shape, v.shape, shaw, {ak.rows(), ak.cols()},
                                  {av.rows(), av.cols()}, args);
  const int64_t H = args.attn.heads;
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H, lq = q.shape[0], lk = k.shape[0];
  const int64_t kd = args.max_distance;
  const AttentionMask& mask = args.attn.mask;
  const float scale = args.attn.scale;
  const float ninf = -std::numeric_limits<float>::infinity();

  RelativeAttentionHost r;
  r.out = Tensor({lq, H * dv});
  r.probs = Tensor({H, lq, lk});
  r.scores = Tensor({H, lq, lk});
  if (args.want_terms && shaw) {
    r.key_term = Tensor({H, lq, lk});
    r.value_term = Tensor({H, lq, dv});
  }
  if (args.want_span_mask && span) r.span_mask = Tensor({H, lq, lk});

  for (int64_t h = 0; h < H; ++h) {
    const Mat qh = q.mat().block(0, h * dh, lq, dh), kh = k.mat().block(0, h * dh, lk, dh);
    const Mat vh = v.mat().block(0, h * dv, lk, dv);
    Mat e = qh * kh.transpose();  // [Lq, Lk]
    if (shaw) {
      Mat kt = shaw_key_term(qh, ak, lk, kd, args.shaw_efficient);
      if (r.key_term.numel()) Eigen::Map<Mat>(r.key_term.data.data() + h * lq * lk, lq, lk) = kt * scale;
      e += kt;
    }
    e *= scale;
    Mat m = Mat::Ones(lq, lk);  // soft span mask
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) {
        if (!mask.is_allowed(i, j, lk)) {
          e(i, j) = ninf;
          m(i, j) = 0.0f;
        } else if (span) {
          m(i, j) = span_mask(args.span_z[size_t(h * lq + i)], span_distance(i, j, lq, lk),
                              args.span_ramp, args.span_max, args.span_offset);
        }
      }
    Mat a = Mat::Zero(lq, lk);
    for (int64_t i = 0; i < lq; ++i)  // the span's softmax, Shaw's plain one (m = 1): span_softmax.h
      span_softmax_row<double>(e.row(i).data(), m.row(i).data(), lk, span && args.span_after,
                               a.row(i).data());
    Mat oh = a * vh;
    if (shaw) {
      Mat vt = shaw_value_term(a, av, kd, args.shaw_efficient);
      if (r.value_term.numel()) Eigen::Map<Mat>(r.value_term.data.data() + h * lq * dv, lq, dv) = vt;
      oh += vt;
    }
    r.out.mat().block(0, h * dv, lq, dv) = oh;
    Eigen::Map<Mat>(r.probs.data.data() + h * lq * lk, lq, lk) = a;
    Eigen::Map<Mat>(r.scores.data.data() + h * lq * lk, lq, lk) = e;
    if (r.span_mask.numel()) Eigen::Map<Mat>(r.span_mask.data.data() + h * lq * lk, lq, lk) = m;
  }
  return r;
}

namespace {

std::vector<Tensor> relative_attention_on_host(const std::vector<Tensor>& in,
                                               const RelativeOpArgs& args) {
  Mat ak, av;
  if (in.size() == kRelativeInputsWithShaw) {
    ak = in[3].mat();
    av = in[4].mat();
  }
  RelativeAttentionHost h =
      relative_attention_reference(in.at(0), in.at(1), in.at(2), ak, av, args);
  std::vector<Tensor> out = {std::move(h.out)};
  if (args.attn.want_probs) out.push_back(std::move(h.probs));
  if (args.attn.want_scores) out.push_back(std::move(h.scores));
  for (Tensor* t : {&h.key_term, &h.value_term, &h.span_mask})
    if (t->shape.size() == 3) out.push_back(std::move(*t));
  return out;
}

bool uses_relative_attention(const ModelConfig& c) {
  return c.shaw() != nullptr || c.adaptive_span() != nullptr;
}

constexpr ModuleOpOf<RelativeOpArgs> kRelativeAttention =
    module_op<RelativeOpArgs, relative_attention_on_host>(
        "relative_attention",
        "Shaw relative-position / adaptive-span attention (scores, soft mask, softmax, value "
        "term) computed on the host",
        uses_relative_attention);
const RegisterModuleOp kRegisterRelativeAttention(kRelativeAttention.op);

}  // namespace

const ModuleOp& relative_attention_op() { return kRelativeAttention.op; }

RelativeAttentionResult relative_attention(Backend& be, const DTensor& q, const DTensor& k,
                                           const DTensor& v, const RelativeAttentionArgs& args) {
  const bool shaw = args.shaw();
  if (shaw && !args.rel_v) throw AtlasError("relative_attention: rel_k given without rel_v");
  check_relative_attention_shapes(q.shape, k.shape, v.shape, shaw, args.rel_k.shape,
                                  args.rel_v.shape, args);
  std::vector<DTensor> in = {q, k, v};
  if (shaw) in.insert(in.end(), {args.rel_k, args.rel_v});
  const std::vector<DTensor> out =
      run_op(be, kRelativeAttention, in, static_cast<const RelativeOpArgs&>(args));
  RelativeAttentionResult r;
  size_t next = 0;
  r.out = out.at(next++);
  if (args.attn.want_probs) r.probs = out.at(next++);
  if (args.attn.want_scores) r.scores = out.at(next++);
  if (shaw && args.want_terms) {
    r.key_term = out.at(next++);
    r.value_term = out.at(next++);
  }
  if (args.span() && args.want_span_mask) r.span_mask = out.at(next++);
  return r;
}

}  // namespace atlas
