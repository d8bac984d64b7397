// The FAVOR+ error study (core/analysis/performer_study.h) that `atlas performer-error` prints
// and the Performer panel draws: its matrices and errors against a naive double-precision
// recount from the same Q, K and random features (phi and softmax written here with loops).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/analysis/performer_study.h"
#include "core/tensor/error.h"

using namespace atlas;

namespace {

struct StudyInputs {
  std::vector<double> q, k;  // [L, d] each
};

// The study's Q and K by its stated rule: N(0, sd^2) from `seed`, q then k per element, row-major.
StudyInputs studyInputs(const FavorStudySpec& s) {
  std::mt19937_64 g(s.seed);
  std::normal_distribution<float> n(0.0f, static_cast<float>(s.sd));
  StudyInputs in;
  for (int64_t e = 0; e < s.length * s.d; ++e) {
    in.q.push_back(n(g));
    in.k.push_back(n(g));
  }
  return in;
}

// softmax(q k^T / sqrt d) with loops, [L, L].
std::vector<double> loopSoftmax(const StudyInputs& in, int64_t L, int64_t d, bool causal) {
  std::vector<double> a(size_t(L * L), 0.0);
  for (int64_t i = 0; i < L; ++i) {
    const int64_t n = causal ? i + 1 : L;
    double mx = -INFINITY, sum = 0;
    std::vector<double> s(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += in.q[size_t(i * d + c)] * in.k[size_t(j * d + c)];
      s[size_t(j)] = dot / std::sqrt(double(d));
      mx = std::max(mx, s[size_t(j)]);
    }
    for (int64_t j = 0; j < n; ++j) sum += std::exp(s[size_t(j)] - mx);
    for (int64_t j = 0; j < n; ++j) a[size_t(i * L + j)] = std::exp(s[size_t(j)] - mx) / sum;
  }
  return a;
}

// phi(x)_r = m^(-1/2) exp(w_r . x' - |x'|^2 / 2), x' = x / d^(1/4), of row `row` of x.
std::vector<double> loopPhi(const std::vector<double>& x, int64_t row, int64_t d, const Mat& w) {
  const double s = std::pow(double(d), -0.25);
  double half = 0;
  for (int64_t c = 0; c < d; ++c) half += 0.5 * (x[size_t(row * d + c)] * s) * (x[size_t(row * d + c)] * s);
  std::vector<double> out(size_t(w.rows()));
  for (int64_t r = 0; r < w.rows(); ++r) {
    double dot = 0;
    for (int64_t c = 0; c < d; ++c) dot += double(w(r, c)) * x[size_t(row * d + c)] * s;
    out[size_t(r)] = std::exp(dot - half) / std::sqrt(double(w.rows()));
  }
  return out;
}

// rownorm(phi(Q) phi(K)^T) with loops, [L, L] (causal: keys 0..i).
std::vector<double> loopImplicit(const StudyInputs& in, int64_t L, int64_t d, const Mat& w, bool causal) {
  std::vector<double> a(size_t(L * L), 0.0);
  for (int64_t i = 0; i < L; ++i) {
    const std::vector<double> pq = loopPhi(in.q, i, d, w);
    double sum = 0;
    for (int64_t j = 0; j < (causal ? i + 1 : L); ++j) {
      const std::vector<double> pk = loopPhi(in.k, j, d, w);
      double dot = 0;
      for (size_t r = 0; r < pq.size(); ++r) dot += pq[r] * pk[r];
      a[size_t(i * L + j)] = dot;
      sum += dot;
    }
    for (int64_t j = 0; j < L; ++j) a[size_t(i * L + j)] /= sum;
  }
  return a;
}

}  // namespace

TEST_CASE("FAVOR+ study: matrices and errors equal a naive recount from the same Q, K and features",
          "[performer][analysis]") {
  for (const bool causal : {false, true}) {
    FavorStudySpec spec;
    spec.length = 12;
    spec.d = 8;
    spec.features = {64, 4, 16};  // reported in this order, not sorted
    spec.sd = 0.7;
    spec.seed = 11;
    spec.causal = causal;
    spec.keep_implicit = 16;
    const FavorStudy study = favor_error_study(spec);
    const int64_t L = spec.length;
    const StudyInputs in = studyInputs(spec);
    const std::vector<double> exact = loopSoftmax(in, L, spec.d, causal);
    REQUIRE(study.exact.rows() == L);
    REQUIRE(study.exact.cols() == L);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j) CHECK(study.exact(i, j) == Approx(exact[size_t(i * L + j)]).margin(1e-6));
    REQUIRE(study.errors.size() == 3);
    for (size_t n = 0; n < spec.features.size(); ++n) {
      INFO("m " << spec.features[n] << (causal ? " causal" : ""));
      // The features are the study's own input: drawn from seed + 1, as it states.
      const Mat w = orthogonal_features(spec.features[n], spec.d, spec.seed + 1);
      const std::vector<double> implicit = loopImplicit(in, L, spec.d, w, causal);
      double meanAbs = 0, maxTv = 0;
      for (int64_t i = 0; i < L; ++i) {
        double tv = 0;
        for (int64_t j = 0; j < L; ++j) {
          const double diff = std::abs(implicit[size_t(i * L + j)] - exact[size_t(i * L + j)]);
          meanAbs += diff;
          tv += 0.5 * diff;
        }
        maxTv = std::max(maxTv, tv);
      }
      meanAbs /= double(L * L);
      CHECK(study.errors[n].mean_abs == Approx(meanAbs).epsilon(1e-3));
      CHECK(study.errors[n].max_tv == Approx(maxTv).epsilon(1e-3));
      if (spec.features[n] == spec.keep_implicit) {
        REQUIRE(study.implicit.rows() == L);
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < L; ++j)
            CHECK(study.implicit(i, j) == Approx(implicit[size_t(i * L + j)]).margin(1e-5));
      }
    }
    // More features, closer to softmax (m 64 against m 4).
    CHECK(study.errors[0].mean_abs < study.errors[1].mean_abs);
  }
}

TEST_CASE("FAVOR+ study keeps no implicit matrix unless asked, and refuses sizes it cannot draw",
          "[performer][analysis]") {
  FavorStudySpec spec;
  spec.length = 5;
  spec.d = 4;
  spec.features = {8};
  CHECK(favor_error_study(spec).implicit.size() == 0);
  auto refused = [](FavorStudySpec s, const std::string& why) {
    try {
      favor_error_study(s);
      FAIL("accepted: " << why);
    } catch (const AtlasError& e) {
      CHECK_THAT(e.what(), Catch::Contains(why));
    }
  };
  FavorStudySpec s = spec;
  s.length = 0;
  refused(s, "length and a head width of at least 1, got 0 and 4");
  s = spec;
  s.features = {8, 0};
  refused(s, "m >= 1 random features, got 0");
  s = spec;
  s.sd = 0;
  refused(s, "standard deviation above 0");
}
