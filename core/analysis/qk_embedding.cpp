// Query-key embedding by joint PCA (qk_embedding.h).
#include "core/analysis/qk_embedding.h"

#include <Eigen/Dense>
#include <cmath>

#include "core/tensor/error.h"

namespace atlas {

QkEmbedding qk_embedding(const std::vector<float>& q, const std::vector<float>& k, int64_t nq, int64_t nk, int64_t d) {
  using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  if (nq < 1 || nk < 1 || d < 1) throw AtlasError("query-key embedding needs at least one query, one key and one dimension");
  MatD Q = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(q.data(), nq, d).cast<double>();
  MatD K = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(k.data(), nk, d).cast<double>();
  // Keys onto the queries' centroid, then equal mean norms.
  const Eigen::RowVectorXd qc = Q.colwise().mean(), kc = K.colwise().mean();
  K.rowwise() += qc - kc;
  const double qn = Q.rowwise().norm().mean(), kn = K.rowwise().norm().mean();
  if (qn > 0 && kn > 0) {
    const double s = std::sqrt(kn / qn);
    Q *= s;
    K /= s;
  }
  MatD all(nq + nk, d);
  all << Q, K;
  const Eigen::RowVectorXd mean = all.colwise().mean();
  all.rowwise() -= mean;
  const Eigen::MatrixXd cov = (all.transpose() * all) / double(std::max<int64_t>(1, nq + nk - 1));
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov);
  const Eigen::VectorXd values = eig.eigenvalues();  // ascending
  Eigen::MatrixXd vectors = eig.eigenvectors();
  const double total = std::max(values.sum(), 1e-300);
  QkEmbedding out;
  out.queries = nq;
  out.keys = nk;
  out.points.resize(size_t((nq + nk) * 2));
  for (int c = 0; c < 2; ++c) {
    const int64_t col = d - 1 - c;  // the largest eigenvalues last
    if (col < 0) break;
    Eigen::VectorXd v = vectors.col(col);
    // A deterministic sign: the largest loading positive.
    Eigen::Index at = 0;
    v.cwiseAbs().maxCoeff(&at);
    if (v(at) < 0) v = -v;
    out.explained[c] = std::max(0.0, values(col)) / total;
    const Eigen::VectorXd proj = all * v;
    for (int64_t i = 0; i < nq + nk; ++i) out.points[size_t(i * 2 + c)] = float(proj(i));
  }
  return out;
}

QkEmbedding qk_embedding(const Trace& trace, const std::string& array, int64_t head) {
  const AttentionMap* m = trace.attention_map(array);
  if (!m || m->heads <= 0) throw AtlasError("the query-key embedding: " + array + " is not in the attention-map catalogue");
  const TracedArray* q = trace.find(m->companions.q);
  const TracedArray* k = trace.find(m->companions.k);
  if (!q || !k)
    throw AtlasError("the query-key embedding needs the queries and keys of " + array +
                     ": run with them traced (TraceOptions::qk; the panel turns it on)");
  const int64_t heads = m->heads;
  if (head < 0 || head >= heads)
    throw AtlasError("head " + std::to_string(head) + " does not exist; " + array + " has " + std::to_string(heads));
  const int64_t nq = q->tensor.shape[0], nk = k->tensor.shape[0];
  const int64_t dh = q->tensor.shape[1] / heads;
  const int64_t kv_heads = k->tensor.shape[1] / dh;  // grouped-query: fewer key heads
  const int64_t kh = kv_heads == heads ? head : head / (heads / std::max<int64_t>(1, kv_heads));
  std::vector<float> qh(size_t(nq * dh)), khv(size_t(nk * dh));
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t e = 0; e < dh; ++e) qh[size_t(i * dh + e)] = q->tensor.data[size_t(i * q->tensor.shape[1] + head * dh + e)];
  for (int64_t j = 0; j < nk; ++j)
    for (int64_t e = 0; e < dh; ++e) khv[size_t(j * dh + e)] = k->tensor.data[size_t(j * k->tensor.shape[1] + kh * dh + e)];
  return qk_embedding(qh, khv, nq, nk, dh);
}

}  // namespace atlas
