// The CPU backend's attention against a naive double-precision loop at lengths where it
// computes a causal map in row blocks over the visible keys (>= 128 queries): causal, with a
// causal offset (queries after cached keys), with a sliding window, and with padding, so every
// block boundary, skipped upper triangle and masked row is compared value by value.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/backend/backend.h"
#include "core/tensor/random.h"
#include "tests/core/random_tensor.h"

using namespace atlas;
using atlas::test::random_tensor;

namespace {

void check_attention_against_naive(int64_t lq, int64_t lk, const AttentionMask& mask) {
  const int64_t H = 2, dk = 8;
  const Tensor q = random_tensor({lq, H * dk}, 1), k = random_tensor({lk, H * dk}, 2), v = random_tensor({lk, H * dk}, 3);
  auto be = make_cpu_backend();
  AttentionArgs args;
  args.heads = H;
  args.scale = 0.3f;
  args.mask = mask;
  args.want_probs = args.want_scores = true;
  const AttentionResult r = be->attention(be->upload(q), be->upload(k), be->upload(v), args);
  const Tensor probs = be->download(r.probs), scores = be->download(r.scores), out = be->download(r.out);
  double worst_p = 0, worst_o = 0;
  int64_t score_mismatch = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      std::vector<double> s(size_t(lk), -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        if (!mask.is_allowed(i, j, lk)) continue;
        double dot = 0;
        for (int64_t c = 0; c < dk; ++c) dot += double(q.data[size_t(i * H * dk + h * dk + c)]) * k.data[size_t(j * H * dk + h * dk + c)];
        s[size_t(j)] = dot * 0.3;
        mx = std::max(mx, s[size_t(j)]);
      }
      double z = 0;
      for (int64_t j = 0; j < lk; ++j) z += std::isinf(s[size_t(j)]) ? 0 : std::exp(s[size_t(j)] - mx);
      std::vector<double> o(size_t(dk), 0.0);
      for (int64_t j = 0; j < lk; ++j) {
        const double p = (std::isinf(s[size_t(j)]) || z == 0) ? 0 : std::exp(s[size_t(j)] - mx) / z;
        const size_t at = size_t((h * lq + i) * lk + j);
        worst_p = std::max(worst_p, std::abs(p - probs.data[at]));
        const float got_s = scores.data[at];
        if (std::isinf(s[size_t(j)]) ? got_s != -std::numeric_limits<float>::infinity()
                                     : std::abs(got_s - s[size_t(j)]) > 1e-4 * std::max(1.0, std::abs(s[size_t(j)])))
          ++score_mismatch;
        for (int64_t c = 0; c < dk; ++c) o[size_t(c)] += p * v.data[size_t(j * H * dk + h * dk + c)];
      }
      for (int64_t c = 0; c < dk; ++c)
        worst_o = std::max(worst_o, std::abs(o[size_t(c)] - out.data[size_t(i * H * dk + h * dk + c)]));
    }
  CHECK(worst_p < 1e-5);
  CHECK(worst_o < 1e-4);
  CHECK(score_mismatch == 0);
}

}  // namespace

TEST_CASE("CPU attention in causal row blocks equals a naive loop", "[backend][attention]") {
  AttentionMask m;
  m.causal = true;
  SECTION("causal, 200 queries (blocks of 64 and a tail)") {
    check_attention_against_naive(200, 200, m);
  }
  SECTION("causal after 37 cached keys") {
    m.causal_offset = 37;
    check_attention_against_naive(150, 187, m);
  }
  SECTION("sliding window of 50") {
    m.window = 50;
    check_attention_against_naive(193, 193, m);
  }
  SECTION("padding keys inside the span, and queries with no key at all") {
    m.causal_offset = -3;  // the first three queries see nothing
    m.key_valid.assign(140, 1);
    for (int j = 10; j < 140; j += 7) m.key_valid[size_t(j)] = 0;
    check_attention_against_naive(140, 140, m);
  }
  SECTION("no causal mask: one block") {
    AttentionMask none;
    check_attention_against_naive(130, 90, none);
  }
}
