// Query-key embedding (core/analysis/qk_embedding.h): the normalisation does not change what
// the head attends to and lines keys up with the queries they copy; the joint PCA of 2-D vectors
// keeps every distance (a rotation); the traced route equals the matrices sliced by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/analysis/qk_embedding.h"
#include "core/model/params.h"
#include "core/tensor/error.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

TEST_CASE("keys that are translated, scaled copies of the queries land on them", "[analysis][qk]") {
  // k_i = 3 (q_i + t) for a common t, with queries centred on 0: after the key centroid moves
  // onto the queries' (0) and the norms are balanced (q s, k / s with s = sqrt 3), key i sits
  // at query i.
  std::vector<float> q = {1, 0, 0, 2, -1, 0, 0, -2, 1, 1, 0, 0.5f, -0.5f, 2, 1, -1, 0, 1};  // 6 x 3
  for (int c = 0; c < 3; ++c) {
    float mean = 0;
    for (int i = 0; i < 6; ++i) mean += q[size_t(i * 3 + c)] / 6;
    for (int i = 0; i < 6; ++i) q[size_t(i * 3 + c)] -= mean;
  }
  std::vector<float> k(q.size());
  const float t[3] = {5, -3, 2};
  for (size_t i = 0; i < q.size(); ++i) k[i] = 3.0f * (q[i] + t[i % 3]);
  const QkEmbedding e = qk_embedding(q, k, 6, 6, 3);
  for (int i = 0; i < 6; ++i) {
    CHECK(e.points[size_t(i * 2)] == Approx(e.points[size_t((6 + i) * 2)]).margin(1e-4));
    CHECK(e.points[size_t(i * 2 + 1)] == Approx(e.points[size_t((6 + i) * 2 + 1)]).margin(1e-4));
  }
  CHECK(e.explained[0] >= e.explained[1]);
  CHECK(e.explained[0] + e.explained[1] <= 1.0 + 1e-9);
}

TEST_CASE("the PCA of 2-D queries and keys is a rotation: every distance is kept", "[analysis][qk]") {
  const std::vector<float> q = {0, 0, 1, 0, 0, 2, 3, 1};  // 4 x 2
  const std::vector<float> k = {1, 1, -1, 2, 2, -1};      // 3 x 2, centroid (2/3, 2/3)
  const QkEmbedding e = qk_embedding(q, k, 4, 3, 2);
  // The same normalisation done here: keys onto the queries' centroid (1, 0.75), equal mean norms.
  std::vector<double> pts;
  for (int i = 0; i < 4; ++i) pts.insert(pts.end(), {double(q[size_t(2 * i)]), double(q[size_t(2 * i + 1)])});
  for (int j = 0; j < 3; ++j)
    pts.insert(pts.end(), {k[size_t(2 * j)] + 1.0 - 2.0 / 3, k[size_t(2 * j + 1)] + 0.75 - 2.0 / 3});
  double qn = 0, kn = 0;
  for (int i = 0; i < 4; ++i) qn += std::hypot(pts[size_t(2 * i)], pts[size_t(2 * i + 1)]) / 4;
  for (int j = 4; j < 7; ++j) kn += std::hypot(pts[size_t(2 * j)], pts[size_t(2 * j + 1)]) / 3;
  const double s = std::sqrt(kn / qn);
  for (int i = 0; i < 7; ++i)
    for (int c = 0; c < 2; ++c) pts[size_t(2 * i + c)] *= i < 4 ? s : 1.0 / s;
  for (int a = 0; a < 7; ++a)
    for (int b = a + 1; b < 7; ++b) {
      const double want = std::hypot(pts[size_t(2 * a)] - pts[size_t(2 * b)], pts[size_t(2 * a + 1)] - pts[size_t(2 * b + 1)]);
      const double got = std::hypot(e.points[size_t(2 * a)] - e.points[size_t(2 * b)],
                                    e.points[size_t(2 * a + 1)] - e.points[size_t(2 * b + 1)]);
      CHECK(got == Approx(want).epsilon(1e-4));
    }
  CHECK(e.explained[0] + e.explained[1] == Approx(1.0));
}

TEST_CASE("the embedding of a traced head equals the one of its sliced queries and keys", "[analysis][qk]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-llama");  // grouped-query heads
  const Model model(c, init_params(c, 2));
  RunOptions o;
  o.trace.qk = true;
  const RunResult r = model.run("query key", "", o);
  const Tensor& q = r.trace.find("decoder.layer1.self_attn.q")->tensor;
  const Tensor& k = r.trace.find("decoder.layer1.self_attn.k")->tensor;
  const int64_t L = q.shape[0], dh = c.d_head(), head = 3;
  const int64_t kh = k.shape[1] / dh == c.n_heads ? head : head / (c.n_heads / (k.shape[1] / dh));
  std::vector<float> qs, ks;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t e = 0; e < dh; ++e) {
      qs.push_back(q.data[size_t(i * q.shape[1] + head * dh + e)]);
      ks.push_back(k.data[size_t(i * k.shape[1] + kh * dh + e)]);
    }
  const QkEmbedding want = qk_embedding(qs, ks, L, L, dh);
  const QkEmbedding got = qk_embedding(r.trace, "decoder.layer1.self_attn", head);
  CHECK(got.points == want.points);
  const RunResult plain = model.run("query key", "", RunOptions{});
  CHECK_THROWS_WITH(qk_embedding(plain.trace, "decoder.layer1.self_attn", 0), Catch::Contains("TraceOptions::qk"));
  CHECK_THROWS_WITH(qk_embedding(r.trace, "decoder.layer1.self_attn", 9), Catch::Contains("head 9"));
}
