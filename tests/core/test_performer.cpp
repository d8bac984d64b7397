// Performer FAVOR+: features are positive and orthogonal in blocks, the linear-time
// outputs equal the implicit attention matrix times V (written here with loops), large m
// approaches exact softmax, errors shrink with m, config rejects m = 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/variants/performer/performer.h"

using namespace atlas;

namespace {
Mat gaussian(int64_t r, int64_t c, std::mt19937& g, float sd = 1.0f) {
  std::normal_distribution<float> n(0.0f, sd);
  Mat m(r, c);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) m(i, j) = n(g);
  return m;
}

// Exact softmax with loops (independent of exact_softmax_attention).
std::vector<double> naive_softmax(const Mat& q, const Mat& k, bool causal) {
  const int64_t L = q.rows(), d = q.cols();
  std::vector<double> a(size_t(L * L), 0.0);
  for (int64_t i = 0; i < L; ++i) {
    double mx = -1e300, z = 0;
    const int64_t n = causal ? i + 1 : L;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < d; ++t) s += double(q(i, t)) * k(j, t);
      a[size_t(i * L + j)] = s / std::sqrt(double(d));
      mx = std::max(mx, a[size_t(i * L + j)]);
    }
    for (int64_t j = 0; j < n; ++j) z += (a[size_t(i * L + j)] = std::exp(a[size_t(i * L + j)] - mx));
    for (int64_t j = 0; j < n; ++j) a[size_t(i * L + j)] /= z;
  }
  return a;
}
}  // namespace

TEST_CASE("orthogonal random features: orthogonal blocks, positive features", "[performer]") {
  const Mat w = orthogonal_features(20, 8, 3);
  REQUIRE(w.rows() == 20);
  for (int64_t a = 0; a < 8; ++a)
    for (int64_t b = a + 1; b < 8; ++b) CHECK(std::abs(w.row(a).dot(w.row(b))) < 1e-3 * w.row(a).norm() * w.row(b).norm());
  for (int64_t a = 8; a < 16; ++a)
    for (int64_t b = a + 1; b < 16; ++b) CHECK(std::abs(w.row(a).dot(w.row(b))) < 1e-3 * w.row(a).norm() * w.row(b).norm());
  CHECK(orthogonal_features(20, 8, 3) == w);  // fixed seed
  std::mt19937 g(1);
  const Mat phi = positive_features(gaussian(10, 8, g), w, true);
  CHECK((phi.array() > 0).all());
}

TEST_CASE("FAVOR+ outputs equal the implicit attention times V, both directions", "[performer]") {
  std::mt19937 g(2);
  const int64_t L = 17, d = 8, dv = 3;
  const Mat q = gaussian(L, d, g), k = gaussian(L, d, g), v = gaussian(L, dv, g);
  const Mat w = orthogonal_features(32, d, 5);
  for (bool causal : {false, true}) {
    const Mat pq = positive_features(q, w, true), pk = positive_features(k, w, false);
    const Mat out = favor_attention(q, k, v, w, causal);
    for (int64_t i = 0; i < L; ++i) {  // loops: weights phi(q_i).phi(k_j), normalised
      std::vector<double> wgt(size_t(L), 0.0);
      double z = 0;
      for (int64_t j = 0; j < (causal ? i + 1 : L); ++j) {
        for (int64_t r = 0; r < w.rows(); ++r) wgt[size_t(j)] += double(pq(i, r)) * pk(j, r);
        z += wgt[size_t(j)];
      }
      for (int64_t t = 0; t < dv; ++t) {
        double o = 0;
        for (int64_t j = 0; j < L; ++j) o += wgt[size_t(j)] / z * v(j, t);
        REQUIRE(out(i, t) == Approx(o).margin(1e-4));
      }
    }
  }
}

TEST_CASE("FAVOR+ with m = 4096 approaches exact softmax; error shrinks with m", "[performer]") {
  std::mt19937 g(3);
  const int64_t L = 48, d = 16;
  // Small norms: the estimator's relative variance grows like exp(|q' + k'|^2).
  const Mat q = gaussian(L, d, g, 0.5f), k = gaussian(L, d, g, 0.5f);
  for (bool causal : {false, true}) {
    const std::vector<double> exact = naive_softmax(q, k, causal);
    Mat ex(L, L);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) ex(i, j) = float(exact[size_t(i * L + j)]);
    CHECK(attention_error(exact_softmax_attention(q, k, causal), ex).max_tv < 1e-5);
    const ApproxError big = attention_error(favor_implicit_attention(q, k, orthogonal_features(4096, d, 7), causal), ex);
    const ApproxError small = attention_error(favor_implicit_attention(q, k, orthogonal_features(8, d, 7), causal), ex);
    INFO("causal " << causal << " m 4096: tv " << big.max_tv << " mean " << big.mean_abs
                   << "; m 8: tv " << small.max_tv);
    CHECK(big.max_tv < 0.1);
    CHECK(big.mean_abs < 2e-3);
    CHECK(small.max_tv > 2 * big.max_tv);
  }
}

TEST_CASE("performer config: m = 0 rejected naming the key; model run traces the implicit matrix",
          "[performer][config]") {
  auto error_of = [](const std::string& json) -> std::string {
    try {
      parse_config(json, "t.json");
    } catch (const AtlasError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error_of(R"({"performer": {"enabled": true, "features": 0}})"), Catch::Contains("performer.features"));
  CHECK_THAT(error_of(R"({"performer": {"enabled": true, "feature": 8}})"), Catch::Contains("features"));
  CHECK_THAT(error_of(R"({"performer": {"enabled": true}, "lsh": {"enabled": true}})"), Catch::Contains("performer.enabled"));
  ModelConfig c = parse_config(R"({"architecture": "decoder", "d_model": 16, "n_heads": 2, "d_ff": 32,
      "n_layers": 1, "performer": {"enabled": true, "features": 64, "seed": 4}})", "t");
  CHECK(parse_config(config_to_json(c), "again").performer()->features == 64);
  Model m(c, init_params(c, 1));
  RunResult r = m.run("performer", "", RunOptions{});
  const auto* a = r.trace.find("decoder.layer0.self_attn");
  REQUIRE(a);
  const int64_t L = 9;
  REQUIRE(a->tensor.shape == Shape{2, L, L});
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) {
        const float p = a->tensor.data[size_t((h * L + i) * L + j)];
        if (j > i) REQUIRE(p == 0.0f);
        REQUIRE(p >= 0.0f);
        s += p;
      }
      REQUIRE(s == Approx(1.0).epsilon(1e-5));
    }
}
