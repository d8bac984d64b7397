// The relative_attention op (core/backend/backend.h, RelativeAttentionArgs): the host reference that
// the CPU backend runs and every device kernel is tested against, and the Backend default
// that runs it for a backend without a kernel (reported as a fallback).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/tensor/error.h"
#include "core/variants/relative_attention/relative_attention.h"

namespace atlas {

RelativeAttentionHost relative_attention_reference(const Tensor& q, const Tensor& k,
                                                   const Tensor& v, const Mat& ak, const Mat& av,
                                                   const RelativeAttentionArgs& args) {
  const int64_t H = args.attn.heads;
  if (H < 1 || q.shape.size() != 2 || k.shape.size() != 2 || v.shape.size() != 2 ||
      q.shape[1] != k.shape[1] || q.shape[1] % H != 0 || v.shape[1] % H != 0 ||
      v.shape[0] != k.shape[0])
    throw AtlasError("relative_attention: shapes q " + shape_str(q.shape) + " k " +
                     shape_str(k.shape) + " v " + shape_str(v.shape) + " do not split into " +
                     std::to_string(H) + " heads");
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H, lq = q.shape[0], lk = k.shape[0];
  const bool shaw = args.shaw(), span = args.span();
  const int64_t kd = args.max_distance;
  if (shaw && (ak.rows() != 2 * kd + 1 || ak.cols() != dh || av.rows() != 2 * kd + 1 || av.cols() != dv))
    throw AtlasError("relative_attention: Shaw tables must be [2k+1, d_head] = [" +
                     std::to_string(2 * kd + 1) + ", " + std::to_string(dh) + "]");
  if (span && static_cast<int64_t>(args.span_z.size()) != H * lq)
    throw AtlasError("relative_attention: span_z needs heads x Lq = " + std::to_string(H * lq) +
                     " values, got " + std::to_string(args.span_z.size()));
  const AttentionMask& mask = args.attn.mask;
  if ((!mask.key_valid.empty() && int64_t(mask.key_valid.size()) != lk) ||
      (!mask.allowed.empty() && int64_t(mask.allowed.size()) != lq * lk))
    throw AtlasError("relative_attention: mask sizes do not match " + std::to_string(lq) +
                     " queries x " + std::to_string(lk) + " keys");
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
    for (int64_t i = 0; i < lq; ++i) {
      if (span && args.span_after) {
        // Reference: plain softmax over the allowed keys, then mask and renormalise.
        float mx_all = ninf;
        for (int64_t j = 0; j < lk; ++j) mx_all = std::max(mx_all, e(i, j));
        if (mx_all == ninf) continue;
        double zsum = 0, msum = 0;
        for (int64_t j = 0; j < lk; ++j) zsum += e(i, j) == ninf ? 0.0 : std::exp(double(e(i, j) - mx_all));
        for (int64_t j = 0; j < lk; ++j) {
          double p = e(i, j) == ninf ? 0.0 : std::exp(double(e(i, j) - mx_all)) / zsum;
          a(i, j) = float(p * m(i, j));
          msum += p * m(i, j);
        }
        a.row(i) /= float(msum + 1e-8);
        continue;
      }
      float mx = ninf;
      for (int64_t j = 0; j < lk; ++j)
        if (m(i, j) > 0.0f || (!span && e(i, j) != ninf)) mx = std::max(mx, e(i, j));
      if (mx == ninf) continue;  // no key at all: a zero row, not NaN
      double zsum = 0;
      for (int64_t j = 0; j < lk; ++j)
        if (e(i, j) != ninf && m(i, j) > 0.0f) {
          a(i, j) = float(double(m(i, j)) * std::exp(double(e(i, j) - mx)));
          zsum += a(i, j);
        }
      a.row(i) /= float(zsum);
    }
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

RelativeAttentionResult Backend::relative_attention(const DTensor& q, const DTensor& k,
                                                    const DTensor& v,
                                                    const RelativeAttentionArgs& args) {
  if (args.shaw()) note_host_compute(Op::ShawAttention);
  if (args.span()) note_host_compute(Op::AdaptiveSpan);
  Mat ak, av;
  if (args.shaw()) {
    if (!args.rel_v) throw AtlasError("relative_attention: rel_k given without rel_v");
    ak = download(args.rel_k).mat();
    av = download(args.rel_v).mat();
  }
  RelativeAttentionHost h =
      relative_attention_reference(download(q), download(k), download(v), ak, av, args);
  RelativeAttentionResult r;
  r.out = upload(h.out);
  if (args.attn.want_probs) r.probs = upload(h.probs);
  if (args.attn.want_scores) r.scores = upload(h.scores);
  if (h.key_term.shape.size() == 3) r.key_term = upload(h.key_term);
  if (h.value_term.shape.size() == 3) r.value_term = upload(h.value_term);
  if (h.span_mask.shape.size() == 3) r.span_mask = upload(h.span_mask);
  return r;
}

}  // namespace atlas
