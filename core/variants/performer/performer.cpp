// Performer FAVOR+ (seed 003; google-research performer/fast_attention):
//   phi(x) = m^(-1/2) exp(w_r . x' - |x'|^2 / 2), x' = x / d^(1/4)
//   bidirectional: out = phi(Q) (phi(K)^T V) / (phi(Q) (phi(K)^T 1))
//   causal:        out_i = phi(q_i) S_i / phi(q_i) z_i,  S_i = sum_{j<=i} phi(k_j) v_j^T,
//                  z_i = sum_{j<=i} phi(k_j)   (prefix sums, O(L m d) time, O(m d) state)
#include "core/variants/performer/performer.h"

#include <cmath>

#include "core/model/array_name_parts.h"
#include "core/model/forward_pass.h"
#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/performer/favor_features.h"
#include "core/variants/performer/performer_attention.h"

namespace atlas {

Mat orthogonal_features(int64_t m, int64_t d, uint64_t seed) {
  if (m < 1 || d < 1) throw AtlasError("performer: features and d must be >= 1");
  Rng rng(seed ^ 0x5045524630524d45ull);
  Mat w(m, d);
  for (int64_t row = 0; row < m; row += d) {
    Mat g(d, d);
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) g(a, b) = float(rng.normal());
    Eigen::HouseholderQR<Mat> qr(g);
    const Mat q = qr.householderQ();  // orthonormal columns
    for (int64_t r = 0; r < d && row + r < m; ++r) w.row(row + r) = q.col(r).transpose();
  }
  for (int64_t r = 0; r < m; ++r) {  // chi(d) norms: rows distributed like Gaussian rows
    double s = 0;
    for (int64_t a = 0; a < d; ++a) {
      const double x = rng.normal();
      s += x * x;
    }
    w.row(r) *= float(std::sqrt(s));
  }
  return w;
}

Mat positive_features(const Mat& x, const Mat& w, bool per_row_shift) {
  return favor_features(x, w, per_row_shift);
}

Mat favor_attention(const Mat& q, const Mat& k, const Mat& v, const Mat& w, bool causal,
                    const std::vector<uint8_t>& key_valid) {
  const int64_t L = q.rows(), m = w.rows(), dv = v.cols();
  const Mat pq = favor_features(q, w, true);              // [L, m]
  const Mat pk = favor_key_features(k, w, key_valid);     // [Lk, m]
  Mat out(L, dv);
  if (!causal) {
    const Mat kv = pk.transpose() * v;                    // [m, dv]
    const Eigen::VectorXf z = pk.colwise().sum().transpose();  // [m]
    out = pq * kv;
    const Eigen::VectorXf den = pq * z;
    for (int64_t i = 0; i < L; ++i) out.row(i) /= den(i) > 0 ? den(i) : 1.0f;
    return out;
  }
  Mat S = Mat::Zero(m, dv);
  Eigen::VectorXf z = Eigen::VectorXf::Zero(m);
  for (int64_t i = 0; i < L; ++i) {
    S.noalias() += pk.row(i).transpose() * v.row(i);
    z += pk.row(i).transpose();
    const float den = pq.row(i).dot(z);
    out.row(i) = (pq.row(i) * S) / (den > 0 ? den : 1.0f);
  }
  return out;
}

Mat favor_implicit_attention(const Mat& q, const Mat& k, const Mat& w, bool causal,
                             const std::vector<uint8_t>& key_valid) {
  const Mat pk = favor_key_features(k, w, key_valid);
  return favor_implicit_from_features(favor_features(q, w, true), pk, causal);
}

Mat exact_softmax_attention(const Mat& q, const Mat& k, bool causal) {
  Mat a = (q * k.transpose()) / std::sqrt(float(q.cols()));
  for (int64_t i = 0; i < a.rows(); ++i) {
    const int64_t n = causal ? std::min<int64_t>(i + 1, a.cols()) : a.cols();
    const float mx = a.row(i).head(n).maxCoeff();
    a.row(i).head(n) = (a.row(i).head(n).array() - mx).exp();
    a.row(i).head(n) /= a.row(i).head(n).sum();
    if (n < a.cols()) a.row(i).tail(a.cols() - n).setZero();
  }
  return a;
}

ApproxError attention_error(const Mat& approx, const Mat& exact) {
  if (approx.rows() != exact.rows() || approx.cols() != exact.cols())
    throw AtlasError("attention_error: shapes differ");
  ApproxError e;
  const Mat diff = (approx - exact).cwiseAbs();
  e.mean_abs = double(diff.sum()) / double(diff.size());
  for (int64_t i = 0; i < diff.rows(); ++i) e.max_tv = std::max(e.max_tv, 0.5 * double(diff.row(i).sum()));
  return e;
}

Mat performer_head_features(const PerformerConfig& performer, int64_t layer, int64_t head,
                            int64_t d_head) {
  const std::string name =
      "performer/layer" + std::to_string(layer) + "/head" + std::to_string(head);
  return orthogonal_features(performer.features, d_head, performer.seed ^ hash_name(name));
}

std::vector<Mat> performer_layer_features(const PerformerConfig& performer, int64_t layer,
                                          int64_t heads, int64_t d_head) {
  std::vector<Mat> out;
  for (int64_t h = 0; h < heads; ++h) out.push_back(performer_head_features(performer, layer, h, d_head));
  return out;
}

DTensor performer_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& k,
                                  const DTensor& v, const std::string& prefix,
                                  const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = fp.config();
  const int64_t L = q.shape[0], H = c.n_heads, dk = q.shape[1] / H, m = c.performer()->features;
  const int64_t layer = layer_index_of(prefix);
  // Each head's features, fixed by the config's seed, the layer and the head.
  Tensor features({H, m, dk});
  const std::vector<Mat> ws = performer_layer_features(*c.performer(), layer, H, dk);
  for (int64_t h = 0; h < H; ++h)
    std::copy(ws[size_t(h)].data(), ws[size_t(h)].data() + m * dk, features.data.begin() + h * m * dk);
  PerformerArgs args;
  args.heads = int(H);
  args.causal = mask.causal;
  args.key_valid = mask.key_valid;
  args.want_implicit = fp.options().trace.attention && L <= kDenseTraceLimit;
  Backend& be = fp.backend();
  const PerformerResult r = performer_attention(be, q, k, v, be.upload(features), args);
  if (args.want_implicit)
    fp.trace_later(traced_name, "Performer implicit attention rownorm(phi(Q) phi(K)^T) [heads, L, L]", r.implicit);
  // The keys each query may use (causal prefix, padding), as every dense attention traces it.
  if (fp.options().trace.masks && L <= kDenseTraceLimit)
    fp.trace().add(companion_array_name(traced_name, Companion::Mask), "allowed keys (1) per query [Lq, Lk]", mask_matrix(mask, L, L),
                   DType::I32);
  return r.out;
}

}  // namespace atlas
