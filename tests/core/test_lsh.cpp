// Reformer: LSH hashing, LSH attention against full shared-QK attention computed
// naively, round combination, reversible block inversion, chunked feed-forward.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/variants/reformer/lsh_attention.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "tests/core/config_error.h"

using namespace atlas;

namespace {
Mat normal_mat(int64_t r, int64_t c, std::mt19937& g) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Mat m(r, c);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) m(i, j) = n(g);
  return m;
}
}  // namespace

TEST_CASE("LSH: identical inputs hash identically, scale does not matter", "[lsh]") {
  std::mt19937 g(1);
  Mat x = normal_mat(20, 8, g);
  x.row(7) = x.row(3);
  x.row(9) = 2.5f * x.row(3);  // argmax([xR; -xR]) is invariant to positive scale
  LshParams p;
  p.n_buckets = 8;
  p.seed = 42;
  for (int64_t r = 0; r < 3; ++r) {
    auto b = lsh_hash(x, lsh_rotation(p, 0, r, 8), 8);
    CHECK(b[7] == b[3]);
    CHECK(b[9] == b[3]);
    for (auto v : b) CHECK((v >= 0 && v < 8));
  }
  // Fixed seed: the same rotation twice, a different one for another round.
  CHECK(lsh_rotation(p, 0, 0, 8) == lsh_rotation(p, 0, 0, 8));
  CHECK(lsh_rotation(p, 0, 0, 8) != lsh_rotation(p, 0, 1, 8));
  // Hand-made rotation: R = [[1, 0], [0, 1]] in 2-D, 4 buckets: [x0, x1, -x0, -x1].
  Mat R = Mat::Identity(2, 2), pts(4, 2);
  pts << 3, 1, 1, 3, -3, 1, 1, -3;
  CHECK(lsh_hash(pts, R, 4) == std::vector<int32_t>{0, 1, 2, 3});
}

namespace {
// Full shared-QK attention, self excluded unless it is the only key: naive loops.
Mat naive_shared_qk(const Mat& q, const Mat& v, float scale, bool causal) {
  const int64_t L = q.rows();
  Mat out = Mat::Zero(L, v.cols());
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> w(size_t(L), 0.0);
    double mx = -1e300, z = 0;
    bool any = false;
    for (int64_t j = 0; j < L; ++j)
      if (j != i && (!causal || j <= i)) {
        double s = 0, n = 0;
        for (int64_t t = 0; t < q.cols(); ++t) n += double(q(j, t)) * q(j, t);
        for (int64_t t = 0; t < q.cols(); ++t) s += double(q(i, t)) * q(j, t) / std::sqrt(n);
        w[size_t(j)] = s * scale;
        mx = std::max(mx, w[size_t(j)]);
        any = true;
      }
    if (!any) {  // only itself
      out.row(i) = v.row(i);
      continue;
    }
    for (int64_t j = 0; j < L; ++j)
      if (j != i && (!causal || j <= i)) z += (w[size_t(j)] = std::exp(w[size_t(j)] - mx));
      else w[size_t(j)] = 0;
    for (int64_t j = 0; j < L; ++j) out.row(i) += float(w[size_t(j)] / z) * v.row(j);
  }
  return out;
}
}  // namespace

TEST_CASE("LSH with one bucket and one chunk equals full shared-QK attention minus self", "[lsh]") {
  std::mt19937 g(2);
  const int64_t L = 23;
  Mat q = normal_mat(L, 6, g), v = normal_mat(L, 5, g);
  for (bool causal : {false, true}) {
    LshParams p;
    p.n_buckets = 1;
    p.chunk_length = L;
    p.causal = causal;
    LshHeadTrace tr;
    Mat got = lsh_attention_head(q, v, 0.4f, p, 0, &tr);
    Mat want = naive_shared_qk(q, v, 0.4f, causal);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t t = 0; t < v.cols(); ++t) REQUIRE(got(i, t) == Approx(want(i, t)).margin(1e-5));
    if (causal) CHECK(tr.pattern.contains(0, 0));  // query 0 has only itself
  }
}

TEST_CASE("LSH rounds combine to a distribution; chunks see only their chunk and the previous",
          "[lsh]") {
  std::mt19937 g(3);
  const int64_t L = 50, m = 8;
  Mat q = normal_mat(L, 8, g), v = normal_mat(L, 4, g);
  LshParams p;
  p.n_rounds = 4;
  p.n_buckets = 6;
  p.chunk_length = m;
  p.seed = 5;
  p.causal = true;
  LshHeadTrace tr;
  lsh_attention_head(q, v, 0.3f, p, 1, &tr);
  REQUIRE(tr.buckets.size() == 4);
  for (int64_t i = 0; i < L; ++i) {
    double s = 0;
    for (int64_t n = tr.pattern.indptr[size_t(i)]; n < tr.pattern.indptr[size_t(i) + 1]; ++n) {
      REQUIRE(tr.pattern.indices[size_t(n)] <= i);  // causal
      s += tr.probs[size_t(n)];
    }
    REQUIRE(s == Approx(1.0).epsilon(1e-5));
  }
  // Round 0: sorted by (bucket, position); every key a query uses lies in its chunk or the
  // previous one (wrapping), checked from the traced order.
  const auto& order = tr.order[0];
  const auto& b = tr.buckets[0];
  for (int64_t s = 1; s < L; ++s) {
    const int32_t a = order[size_t(s - 1)], c = order[size_t(s)];
    REQUIRE((b[size_t(a)] < b[size_t(c)] || (b[size_t(a)] == b[size_t(c)] && a < c)));
  }
  // With one round, the combined pattern is exactly the chunk rule.
  LshParams one = p;
  one.n_rounds = 1;
  LshHeadTrace t1;
  lsh_attention_head(q, v, 0.3f, one, 1, &t1);
  std::vector<int64_t> pos(static_cast<size_t>(L));
  for (int64_t s = 0; s < L; ++s) pos[size_t(t1.order[0][size_t(s)])] = s;
  const int64_t nc = (L + m - 1) / m;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      const int64_t ci = pos[size_t(i)] / m, cj = pos[size_t(j)] / m;
      const bool near = cj == ci || cj == (ci - 1 + nc) % nc;
      const bool has = t1.pattern.contains(i, j);
      if (j == i) continue;  // self appears with probability ~0 (or 1 when alone)
      REQUIRE(has == near);
    }
}

TEST_CASE("reversible block: inverting recovers the input", "[lsh]") {
  auto be = make_cpu_backend();
  std::mt19937 g(4);
  const int64_t L = 9, d = 6;
  DTensor wa = be->upload(Tensor::from_mat(normal_mat(d, d, g))),
          wf = be->upload(Tensor::from_mat(normal_mat(d, d, g)));
  Sublayer attn = [&](const DTensor& x) { return be->activation(be->linear(x, wa, {}), Activation::GeluTanh); };
  Sublayer ff = [&](const DTensor& x) { return be->activation(be->linear(x, wf, {}), Activation::ReLU); };
  const Tensor x1 = Tensor::from_mat(normal_mat(L, d, g)),
               x2 = Tensor::from_mat(normal_mat(L, d, g));
  DTensor a = be->upload(x1), b = be->upload(x2);
  reversible_forward(*be, attn, ff, a, b);
  // Forward against the equations, by hand on host tensors.
  const Tensor y1 = be->download(a);
  Tensor fx2 = be->download(attn(be->upload(x2)));
  for (size_t n = 0; n < y1.data.size(); ++n) REQUIRE(y1.data[n] == Approx(x1.data[n] + fx2.data[n]));
  reversible_inverse(*be, attn, ff, a, b);
  const Tensor r1 = be->download(a), r2 = be->download(b);
  for (size_t n = 0; n < r1.data.size(); ++n) {
    REQUIRE(r1.data[n] == Approx(x1.data[n]).margin(1e-4));
    REQUIRE(r2.data[n] == Approx(x2.data[n]).margin(1e-4));
  }
}

TEST_CASE("chunked feed-forward gives the same output", "[lsh]") {
  auto be = make_cpu_backend();
  std::mt19937 g(5);
  DTensor w = be->upload(Tensor::from_mat(normal_mat(12, 6, g)));
  DTensor x = be->upload(Tensor::from_mat(normal_mat(11, 6, g)));
  Sublayer f = [&](const DTensor& h) { return be->activation(be->linear(h, w, {}), Activation::ReLU); };
  const Tensor whole = be->download(f(x));
  for (int64_t chunks : {2, 3, 11, 40}) {
    const Tensor parts = be->download(chunked_rows(*be, x, chunks, f));
    REQUIRE(parts.shape == whole.shape);
    for (size_t n = 0; n < whole.data.size(); ++n) REQUIRE(parts.data[n] == Approx(whole.data[n]).margin(1e-6));
  }
}

namespace {
using test::config_error_of;
}  // namespace

TEST_CASE("lsh config: bad values rejected naming the key", "[lsh][config]") {
  CHECK_THAT(config_error_of(R"({"max_positions": 64, "lsh": {"enabled": true, "chunk_length": 128}})"),
             Catch::Contains("lsh.chunk_length"));
  CHECK_THAT(config_error_of(R"({"lsh": {"enabled": true, "n_buckets": 3}})"), Catch::Contains("lsh.n_buckets"));
  CHECK_THAT(config_error_of(R"({"lsh": {"enabled": true, "n_rounds": 0}})"), Catch::Contains("lsh.n_rounds"));
  CHECK_THAT(config_error_of(R"({"lsh": {"reversible": true}})"), Catch::Contains("lsh.reversible"));
  CHECK_THAT(config_error_of(R"({"lsh": {"enabled": true, "rounds": 2}})"), Catch::Contains("n_rounds"));
  ModelConfig c = parse_config(R"({"norm_position": "pre", "lsh": {"enabled": true, "n_rounds": 3,
      "chunk_length": 16, "n_buckets": 4, "seed": 9, "reversible": true, "ff_chunks": 4}})", "t");
  ModelConfig d = parse_config(config_to_json(c), "again");
  CHECK(d.lsh() != nullptr);
  CHECK(d.lsh()->n_rounds == 3);
  CHECK(d.lsh()->chunk_length == 16);
  CHECK(d.lsh()->n_buckets == 4);
  CHECK(d.lsh()->seed == 9);
  REQUIRE(d.reversible());
  CHECK(d.reversible()->ff_chunks == 4);
}

TEST_CASE("Reformer model: traces per round, reversible stack equals its equations", "[lsh][model]") {
  ModelConfig c = parse_config(R"({"architecture": "decoder", "d_model": 16, "n_heads": 2,
      "d_ff": 32, "n_layers": 2, "norm_position": "pre", "max_positions": 64,
      "lsh": {"enabled": true, "n_rounds": 2, "chunk_length": 4, "seed": 3}})", "t");
  Model m(c, init_params(c, 2));
  RunResult r = m.run("hashing attention!", "", RunOptions{});
  const int64_t L = 18;
  REQUIRE(r.trace.find("decoder.layer1.self_attn.round1.buckets"));
  CHECK(r.trace.find("decoder.layer1.self_attn.round1.buckets")->tensor.shape == Shape{2, L});
  CHECK(r.trace.find("decoder.layer0.self_attn.round0.order")->tensor.shape == Shape{2, L});
  const auto& ch = r.trace.find("decoder.layer0.self_attn.chunks")->tensor;
  CHECK(ch.data == std::vector<float>{0, 4, 8, 12, 16, 18});
  const auto& dense = r.trace.find("decoder.layer0.self_attn")->tensor;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < L; ++i) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) {
        const float p = dense.data[size_t((h * L + i) * L + j)];
        if (j > i) REQUIRE(p == 0.0f);
        s += p;
      }
      REQUIRE(s == Approx(1.0).epsilon(1e-5));
    }
  // Reversible + chunked FF: same weights, ff_chunks changes nothing.
  ModelConfig rv = c;
  rv.stack = ReversibleConfig{};
  ModelConfig rv4 = rv;
  rv4.reversible()->ff_chunks = 4;
  ParamStore params = init_params(rv, 2);
  RunResult a = Model(rv, params).run("hashing attention!", "", RunOptions{});
  RunResult b = Model(rv4, params).run("hashing attention!", "", RunOptions{});
  REQUIRE(a.output.shape == b.output.shape);
  for (size_t n = 0; n < a.output.data.size(); ++n) REQUIRE(b.output.data[n] == Approx(a.output.data[n]).margin(1e-5));
}
