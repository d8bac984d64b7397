// The xl_attention module op (xl_attention_op.h): shape checks, its host reference and its call
// on a backend.
// The position term b is computed per (i, j) from rk (no rel_shift), so no garbage entries.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/backend/module_op.h"
#include "core/tensor/error.h"
#include "core/variants/transformer_xl/transformer_xl.h"
#include "core/variants/transformer_xl/xl_attention_op.h"

namespace atlas {

void check_xl_attention_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& rk,
                               const Shape& u, const Shape& vb, const XlAttentionArgs& args) {
  const int64_t H = args.heads;
  auto fail = [&](const std::string& what) {
    throw AtlasError("xl_attention: " + what + " (q " + shape_str(q) + ", k " + shape_str(k) +
                     ", v " + shape_str(v) + ", rk " + shape_str(rk) + ", " +
                     std::to_string(H) + " heads)");
  };
  if (H < 1 || q.size() != 2 || k.size() != 2 || v.size() != 2 || rk.size() != 2)
    fail("q, k, v and rk must be matrices and heads >= 1");
  if (q[1] % H != 0 || k[1] != q[1] || v[1] != q[1] || rk[1] != q[1])
    fail("q, k, v and rk must all have heads x d_head columns");
  if (k[0] != v[0] || k[0] < q[0]) fail("keys must be the memory rows then the query rows");
  const int64_t dh = q[1] / H;
  if (u != Shape{H, dh} || vb != Shape{H, dh})
    fail("u and v must be [heads, d_head], got " + shape_str(u) + " and " + shape_str(vb));
  const int64_t max_dist = xl_max_distance(k[0], args.clamp_len);
  if (k[0] > 0 && rk[0] <= max_dist)
    fail("rk needs a row for every distance up to " + std::to_string(max_dist));
  if (args.same_length && args.mem_len < 1) fail("same_length needs mem_len >= 1");
}

XlAttentionHost xl_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& rk, const Tensor& u, const Tensor& vb,
                                       const XlAttentionArgs& args) {
  check_xl_attention_shapes(q.shape, k.shape, v.shape, rk.shape, u.shape, vb.shape, args);
  const int64_t H = args.heads, dh = q.shape[1] / H, lq = q.shape[0], lk = k.shape[0], m = lk - lq;
  const float ninf = -std::numeric_limits<float>::infinity();
  XlAttentionHost r;
  r.out = Tensor({lq, H * dh});
  r.probs = r.scores = r.term_a = r.term_b = r.term_c = r.term_d = Tensor({H, lq, lk});
  const ConstMatMap Q = q.mat(), K = k.mat(), V = v.mat(), RK = rk.mat(), U = u.mat(), VB = vb.mat();
  Mat s(lq, lk);
  for (int64_t h = 0; h < H; ++h) {
    const auto qh = Q.middleCols(h * dh, dh), kh = K.middleCols(h * dh, dh), rh = RK.middleCols(h * dh, dh);
    const Mat ac = qh * kh.transpose();                    // (a) [Lq, Lk]
    const Eigen::VectorXf ck = kh * U.row(h).transpose();  // (c) [Lk]
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t pos = m + i;
      for (int64_t j = 0; j < lk; ++j) {
        const size_t o = size_t((h * lq + i) * lk + j);
        if (!xl_key_visible(pos, j, args.mem_len, args.same_length)) {
          s(i, j) = ninf;
          continue;
        }
        const int64_t dist = xl_distance(pos, j, args.clamp_len);
        const float b = qh.row(i).dot(rh.row(dist)), d = VB.row(h).dot(rh.row(dist));
        s(i, j) = (ac(i, j) + b + ck(j) + d) * args.scale;
        r.term_a.data[o] = ac(i, j) * args.scale;
        r.term_b.data[o] = b * args.scale;
        r.term_c.data[o] = ck(j) * args.scale;
        r.term_d.data[o] = d * args.scale;
      }
    }
    Mat a(lq, lk);
    for (int64_t i = 0; i < lq; ++i) {
      const float mx = s.row(i).maxCoeff();  // the diagonal key is always visible
      float sum = 0.0f;
      for (int64_t j = 0; j < lk; ++j) sum += a(i, j) = s(i, j) == ninf ? 0.0f : std::exp(s(i, j) - mx);
      a.row(i) /= sum;
    }
    r.out.mat().middleCols(h * dh, dh) = a * V.middleCols(h * dh, dh);
    std::copy(a.data(), a.data() + lq * lk, r.probs.data.begin() + h * lq * lk);
    std::copy(s.data(), s.data() + lq * lk, r.scores.data.begin() + h * lq * lk);
  }
  return r;
}

namespace {

std::vector<Tensor> xl_attention_on_host(const std::vector<Tensor>& in,
                                         const XlAttentionArgs& args) {
  XlAttentionHost h =
      xl_attention_reference(in.at(0), in.at(1), in.at(2), in.at(3), in.at(4), in.at(5), args);
  std::vector<Tensor> out = {std::move(h.out)};
  if (args.want_probs) out.push_back(std::move(h.probs));
  if (args.want_terms)
    for (Tensor* t : {&h.scores, &h.term_a, &h.term_b, &h.term_c, &h.term_d})
      out.push_back(std::move(*t));
  return out;
}

bool uses_xl(const ModelConfig& c) { return c.xl() != nullptr; }

constexpr ModuleOpOf<XlAttentionArgs> kXlAttention =
    module_op<XlAttentionArgs, xl_attention_on_host>(
        "xl_attention",
        "Transformer-XL relative attention (scores over memory and segment, softmax) computed on "
        "the host; the projections, norms and feed-forward run on the backend",
        uses_xl);
const RegisterModuleOp kRegisterXlAttention(kXlAttention.op);

}  // namespace

const ModuleOp& xl_attention_op() { return kXlAttention.op; }

XlAttentionResult xl_attention(Backend& be, const DTensor& q, const DTensor& k, const DTensor& v,
                               const DTensor& rk, const DTensor& u, const DTensor& vb,
                               const XlAttentionArgs& args) {
  check_xl_attention_shapes(q.shape, k.shape, v.shape, rk.shape, u.shape, vb.shape, args);
  const std::vector<DTensor> out = run_op(be, kXlAttention, {q, k, v, rk, u, vb}, args);
  XlAttentionResult r;
  size_t next = 0;
  r.out = out.at(next++);
  if (args.want_probs) r.probs = out.at(next++);
  if (args.want_terms)
    for (DTensor* t : {&r.scores, &r.term_a, &r.term_b, &r.term_c, &r.term_d}) *t = out.at(next++);
  return r;
}

}  // namespace atlas
