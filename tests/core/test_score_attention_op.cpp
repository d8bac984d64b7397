// The score_attention backend op (core/variants/score_functions/score_attention.h): the host
// reference against a scalar loop over seed 004's five score functions written out here (not
// score_matrix), the Backend default against the reference, and the shape checks. Device kernels
// are tested against the same reference in tests/gpu/.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/tensor/error.h"
#include "core/tensor/random.h"
#include "core/variants/score_functions/score_attention.h"
#include "core/variants/score_functions/score_functions.h"
#include "tests/core/random_tensor.h"

using namespace atlas;
using atlas::test::random_tensor;

namespace {

// e_ij of head h by the equations in core/backend/backend.h, one float at a time.
double scalar_score(ScoreFunction f, const Tensor& q, const Tensor& k, const Tensor& w,
                    const Tensor& w1, const Tensor& w2, const Tensor& va, float beta, int64_t H,
                    int64_t h, int64_t i, int64_t j) {
  const int64_t dh = q.shape[1] / H, D = q.shape[1];
  auto qv = [&](int64_t d) { return double(q.data[i * D + h * dh + d]); };
  auto kv = [&](int64_t d) { return double(k.data[j * D + h * dh + d]); };
  double e = 0;
  switch (f) {
    case ScoreFunction::Dot:
      for (int64_t d = 0; d < dh; ++d) e += qv(d) * kv(d);
      return e;
    case ScoreFunction::General:
      for (int64_t a = 0; a < dh; ++a)
        for (int64_t b = 0; b < dh; ++b) e += qv(a) * w.data[(h * dh + a) * dh + b] * kv(b);
      return e;
    case ScoreFunction::Cosine: {
      double nq = 0, nk = 0;
      for (int64_t d = 0; d < dh; ++d) e += qv(d) * kv(d), nq += qv(d) * qv(d), nk += kv(d) * kv(d);
      return beta * e / std::max(std::sqrt(nq) * std::sqrt(nk), 1e-8);
    }
    case ScoreFunction::Location: {
      const int64_t P = w.shape[1];
      for (int64_t d = 0; d < dh; ++d) e += w.data[(h * P + j) * dh + d] * qv(d);
      return e;
    }
    case ScoreFunction::Additive: {
      const int64_t da = w1.shape[1];
      for (int64_t a = 0; a < da; ++a) {
        double s = 0;
        for (int64_t d = 0; d < dh; ++d)
          s += w1.data[(h * da + a) * dh + d] * qv(d) + w2.data[(h * da + a) * dh + d] * kv(d);
        e += va.data[h * da + a] * std::tanh(s);
      }
      return e;
    }
    default: return 0;
  }
}

struct ScoreCase {
  ScoreFunction f;
  int64_t H, dh, lq, lk;
};

}  // namespace

TEST_CASE("score_attention reference equals a scalar loop over each score function", "[score][ops]") {
  const ScoreCase c = GENERATE(
      ScoreCase{ScoreFunction::Dot, 2, 3, 5, 7}, ScoreCase{ScoreFunction::General, 3, 4, 6, 6},
      ScoreCase{ScoreFunction::Cosine, 1, 5, 4, 9}, ScoreCase{ScoreFunction::Location, 2, 4, 5, 6},
      ScoreCase{ScoreFunction::Additive, 2, 3, 7, 5});
  CAPTURE(score_function_name(c.f), c.H, c.dh, c.lq, c.lk);
  Rng rng(uint64_t(c.f) * 31 + 7);
  const int64_t D = c.H * c.dh, da = 4, P = 8;
  const Tensor q = random_tensor(rng, {c.lq, D}), k = random_tensor(rng, {c.lk, D}), v = random_tensor(rng, {c.lk, D});
  Tensor w, w1, w2, va;
  if (c.f == ScoreFunction::General) w = random_tensor(rng, {c.H, c.dh, c.dh});
  if (c.f == ScoreFunction::Location) w = random_tensor(rng, {c.H, P, c.dh});
  if (c.f == ScoreFunction::Additive)
    w1 = random_tensor(rng, {c.H, da, c.dh}), w2 = random_tensor(rng, {c.H, da, c.dh}), va = random_tensor(rng, {c.H, da});
  ScoreAttentionArgs args;
  args.function = c.f;
  args.strength = 3.0f;
  args.attn.heads = int(c.H);
  args.attn.mask.causal = true;
  args.attn.mask.causal_offset = c.lk - c.lq;  // the last query sees every key
  args.attn.mask.key_valid.assign(size_t(c.lk), 1);
  args.attn.mask.key_valid[1] = 0;  // a padded key
  if (c.lq > c.lk - 1) args.attn.mask.causal_offset = 0;

  const ScoreAttentionHost r = score_attention_reference(q, k, v, w, w1, w2, va, args);
  for (int64_t h = 0; h < c.H; ++h)
    for (int64_t i = 0; i < c.lq; ++i) {
      std::vector<double> e(size_t(c.lk)), a(size_t(c.lk), 0.0);
      double top = -1e300, sum = 0;
      for (int64_t j = 0; j < c.lk; ++j) {
        if (!args.attn.mask.is_allowed(i, j, c.lk)) continue;
        e[size_t(j)] = scalar_score(c.f, q, k, w, w1, w2, va, args.strength, c.H, h, i, j);
        top = std::max(top, e[size_t(j)]);
      }
      for (int64_t j = 0; j < c.lk; ++j)
        if (args.attn.mask.is_allowed(i, j, c.lk)) sum += (a[size_t(j)] = std::exp(e[size_t(j)] - top));
      for (int64_t j = 0; j < c.lk; ++j) {
        const size_t at = size_t((h * c.lq + i) * c.lk + j);
        if (!args.attn.mask.is_allowed(i, j, c.lk)) {
          CHECK(r.probs.data[at] == 0.0f);
          CHECK(r.scores.data[at] == -std::numeric_limits<float>::infinity());
          continue;
        }
        CHECK(r.scores.data[at] == Approx(e[size_t(j)]).margin(1e-4));
        CHECK(r.probs.data[at] == Approx(a[size_t(j)] / sum).margin(1e-5));
      }
      for (int64_t d = 0; d < c.dh; ++d) {
        double o = 0;
        for (int64_t j = 0; j < c.lk; ++j) o += a[size_t(j)] / (sum > 0 ? sum : 1) * v.data[j * D + h * c.dh + d];
        CHECK(r.out.data[i * D + h * c.dh + d] == Approx(o).margin(1e-4));
      }
    }

  SECTION("the Backend default returns the reference and only what was asked for") {
    std::unique_ptr<Backend> be = make_cpu_backend();
    ScoreAttentionArgs dargs = args;
    if (w.numel()) dargs.w = be->upload(w);
    if (w1.numel()) dargs.w1 = be->upload(w1), dargs.w2 = be->upload(w2), dargs.v_a = be->upload(va);
    dargs.attn.want_probs = true;
    dargs.attn.want_scores = false;
    const AttentionResult got =
        score_attention(*be, be->upload(q), be->upload(k), be->upload(v), dargs);
    CHECK(be->download(got.out).data == r.out.data);
    CHECK(be->download(got.probs).data == r.probs.data);
    CHECK_FALSE(got.scores);
  }
}

TEST_CASE("score_attention rejects mismatched shapes and weights by name", "[score][ops]") {
  std::unique_ptr<Backend> be = make_cpu_backend();
  const DTensor q = be->upload(Tensor({4, 6})), k = be->upload(Tensor({5, 6})), v = be->upload(Tensor({5, 6}));
  ScoreAttentionArgs args;
  args.attn.heads = 2;
  args.function = ScoreFunction::General;
  args.w = be->upload(Tensor({2, 3, 4}));
  CHECK_THROWS_WITH(score_attention(*be, q, k, v, args), Catch::Contains("W_a must be [2, 3, 3]"));
  args.function = ScoreFunction::Location;
  args.w = be->upload(Tensor({2, 4, 3}));
  CHECK_THROWS_WITH(score_attention(*be, q, k, v, args),
                    Catch::Contains("at most 4 key positions"));
  args.function = ScoreFunction::Dot;
  CHECK_THROWS_WITH(score_attention(*be, q, be->upload(Tensor({5, 4})), v, args),
                    Catch::Contains("heads of one size"));
  args.attn.mask.key_valid.assign(3, 1);
  CHECK_THROWS_WITH(score_attention(*be, q, k, v, args), Catch::Contains("mask sizes"));
  args.attn.mask.key_valid.clear();
  args.function = ScoreFunction::ScaledDot;
  CHECK_THROWS_WITH(score_attention(*be, q, k, v, args), Catch::Contains("attention op's own"));
}
