// Vulkan attention against a naive double-precision loop (scores, masks, softmax, P V per
// head) and against the CPU backend, over masks, odd lengths, long rows and split dispatches.
#include <cmath>

#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct Oracle {
  std::vector<double> out, probs, scores;
  std::vector<double> out_tol, score_tol;
};

// Naive attention. Bounds (derived, then checked to hold with margin on lavapipe):
//   scores: |err| <= (dh + 2) u scale sum_e |q_e k_e|            (a dh-term dot product)
//   probs:  |err| <= 1e-6                                         (|ds| <= ~1e-6, exp ulps)
//   out:    |err| <= 2e-6 max_j |v_j| + (Lk u) sum_j p_j |v_j|     (p error + the P V sum)
Oracle oracle(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionArgs& a) {
  const int64_t H = a.heads, lq = q.shape[0], lk = k.shape[0];
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H;
  Oracle o;
  o.out.assign(lq * H * dv, 0.0);
  o.out_tol.assign(lq * H * dv, 0.0);
  o.probs.assign(H * lq * lk, 0.0);
  o.scores.assign(H * lq * lk, -INFINITY);
  o.score_tol.assign(H * lq * lk, 0.0);
  std::vector<double> s(lk);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        s[j] = -INFINITY;
        if (!a.mask.is_allowed(i, j, lk)) continue;
        double dot = 0, mag = 0;
        for (int64_t e = 0; e < dh; ++e) {
          const double p = double(q.data[i * H * dh + h * dh + e]) * k.data[j * H * dh + h * dh + e];
          dot += p;
          mag += std::fabs(p);
        }
        s[j] = a.scale * dot;
        o.score_tol[(h * lq + i) * lk + j] = (dh + 2) * kU * std::fabs(a.scale) * mag;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) sum += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
      double vmax = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const size_t pi = (h * lq + i) * lk + j;
        o.scores[pi] = s[j];
        o.probs[pi] = std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx) / sum;
      }
      for (int64_t d = 0; d < dv; ++d) {
        double acc = 0, mag = 0;
        for (int64_t j = 0; j < lk; ++j) {
          const double vj = v.data[j * H * dv + h * dv + d];
          const double p = o.probs[(h * lq + i) * lk + j];
          acc += p * vj;
          mag += p * std::fabs(vj);
          vmax = std::max(vmax, std::fabs(vj));
        }
        o.out[i * H * dv + h * dv + d] = acc;
        o.out_tol[i * H * dv + h * dv + d] = lk * kU * mag;
      }
      for (int64_t d = 0; d < dv; ++d) o.out_tol[i * H * dv + h * dv + d] += 2e-6 * vmax;
    }
  return o;
}

struct Case {
  int heads;
  int64_t lq, lk, dh, dv;
  bool causal;
  int64_t offset;
  int key_valid;  // 0 none, 1 random with zeros, 2 all padding
  int allowed;    // 0 none, 1 random, 2 band |i - j| <= 8, 3 random with empty rows
  bool probs, scores;
  float scale;
};

AttentionArgs make_args(const Case& c, uint32_t seed) {
  AttentionArgs a;
  a.heads = c.heads;
  a.scale = c.scale;
  a.want_probs = c.probs;
  a.want_scores = c.scores;
  a.mask.causal = c.causal;
  a.mask.causal_offset = c.offset;
  std::mt19937 gen(seed);
  if (c.key_valid == 1) {
    a.mask.key_valid.assign(c.lk, 1);
    for (auto& b : a.mask.key_valid) b = gen() % 4 != 0;
  } else if (c.key_valid == 2) {
    a.mask.key_valid.assign(c.lk, 0);
  }
  if (c.allowed) {
    a.mask.allowed.assign(c.lq * c.lk, 0);
    for (int64_t i = 0; i < c.lq; ++i)
      for (int64_t j = 0; j < c.lk; ++j) {
        uint8_t& m = a.mask.allowed[i * c.lk + j];
        if (c.allowed == 2) m = std::abs(i - j) <= 8;
        else if (c.allowed == 3) m = (i % 3 != 1) && gen() % 2;
        else m = gen() % 3 != 0;
      }
  }
  return a;
}

void run_case(Gpu& g, const Case& c, uint32_t seed) {
  CAPTURE(c.heads, c.lq, c.lk, c.dh, c.dv, c.causal, c.offset, c.key_valid, c.allowed, c.probs,
          c.scores, c.scale);
  const Tensor q = random_tensor({c.lq, c.heads * c.dh}, seed, -1.5f, 1.5f);
  const Tensor k = random_tensor({c.lk, c.heads * c.dh}, seed + 1, -1.5f, 1.5f);
  const Tensor v = random_tensor({c.lk, c.heads * c.dv}, seed + 2);
  const AttentionArgs args = make_args(c, seed + 3);
  const Oracle o = oracle(q, k, v, args);

  AttentionResult r = g.vk->attention(g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), args);
  REQUIRE(r.out.shape == Shape{c.lq, c.heads * c.dv});
  REQUIRE(bool(r.probs) == c.probs);
  REQUIRE(bool(r.scores) == c.scores);
  // The CPU backend is compared too, including no keys and no value dimensions.
  const bool with_cpu = true;
  AttentionResult cr;
  if (with_cpu)
    cr = g.cpu->attention(g.cpu->upload(q), g.cpu->upload(k), g.cpu->upload(v), args);

  const Tensor out = g.vk->download(r.out);
  require_close(out.data, o.out, o.out_tol, "attention out vs loop");
  std::vector<double> tol2(o.out_tol);
  for (double& t : tol2) t *= 2;
  if (with_cpu)
    require_close(out.data, to_double(g.cpu->download(cr.out).data), tol2, "attention out vs cpu");
  if (c.probs) {
    REQUIRE(r.probs.shape == Shape{c.heads, c.lq, c.lk});
    const Tensor p = g.vk->download(r.probs);
    require_close(p.data, o.probs, 1e-6, "attention probs vs loop");
    if (with_cpu)
      require_close(p.data, to_double(g.cpu->download(cr.probs).data), 2e-6, "attention probs vs cpu");
  }
  if (c.scores) {
    REQUIRE(r.scores.shape == Shape{c.heads, c.lq, c.lk});
    const Tensor s = g.vk->download(r.scores);
    require_close(s.data, o.scores, o.score_tol, "attention scores vs loop (masked = -inf)");
    std::vector<double> st2(o.score_tol);
    for (double& t : st2) t *= 2;
    if (with_cpu)
      require_close(s.data, to_double(g.cpu->download(cr.scores).data), st2, "attention scores vs cpu");
  }
}

}  // namespace

TEST_CASE("vulkan attention matches the loop over masks and odd shapes", "[gpu][attention]") {
  Gpu g;
  const Case cases[] = {
      {1, 1, 1, 1, 1, false, 0, 0, 0, true, true, 1.0f},
      {2, 3, 17, 4, 5, true, 14, 0, 0, true, false, 0.5f},     // causal with 14 memory keys
      {3, 17, 63, 8, 8, true, 0, 0, 0, true, true, 0.35f},
      {1, 65, 65, 16, 16, false, 0, 0, 0, false, false, 0.25f},
      {2, 63, 129, 7, 9, false, 0, 1, 0, true, true, 0.4f},    // padding keys
      {4, 17, 65, 32, 16, true, 3, 0, 1, true, false, 0.18f},  // causal + dense pattern
      {2, 20, 33, 8, 8, true, -5, 0, 0, true, true, 0.35f},    // first 5 rows see nothing
      {1, 9, 13, 4, 4, false, 0, 2, 0, true, true, 0.5f},      // every key is padding
      {2, 127, 129, 64, 64, false, 0, 1, 2, true, false, 0.125f},  // band + padding
      {3, 30, 70, 8, 12, false, 0, 0, 3, true, true, 0.35f},   // pattern with empty rows
      {8, 64, 64, 64, 64, true, 0, 0, 0, true, false, 0.125f}, // d 512, 8 heads
      {1, 5, 0, 4, 4, false, 0, 0, 0, true, true, 1.0f},       // no keys at all
      {2, 5, 9, 4, 0, true, 2, 0, 0, true, false, 1.0f},       // no value dims: probs only
      {2, 3, 200, 4, 3, false, 0, 0, 0, false, true, 3.0f},    // large scores, scores only
  };
  uint32_t seed = 1000;
  for (const Case& c : cases) run_case(g, c, seed += 10);
}

TEST_CASE("vulkan attention handles rows of 4096 keys and 4096 queries", "[gpu][attention][long]") {
  Gpu g;
  run_case(g, {2, 8, 4096, 16, 16, false, 0, 1, 0, true, true, 0.25f}, 7);
  run_case(g, {1, 4096, 4096, 8, 8, true, 0, 0, 0, true, false, 0.35f}, 8);
}

TEST_CASE("vulkan attention splits probabilities larger than one binding into windows",
          "[gpu][attention]") {
  // 64 KiB bindings: [2, 100, 300] probabilities (234 KiB) are written per head in blocks of
  // 54 rows through offset descriptors, and must be indistinguishable from one dispatch.
  VulkanOptions o = options();
  o.max_binding_bytes = 64 * 1024;
  Gpu g(o);
  run_case(g, {2, 100, 300, 8, 8, true, 200, 1, 0, true, true, 0.35f}, 21);
  run_case(g, {3, 61, 257, 4, 4, false, 0, 0, 1, false, true, 0.5f}, 22);
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("vulkan attention falls back to the CPU visibly for heads wider than 512",
          "[gpu][attention]") {
  Gpu g;
  run_case(g, {1, 3, 5, 520, 8, false, 0, 0, 0, true, false, 0.05f}, 31);
  const auto fb = g.vk->fallbacks();
  REQUIRE(fb.size() == 1);
  CHECK_THAT(fb[0], Catch::Contains("attention") && Catch::Contains("CPU"));
}

TEST_CASE("vulkan attention rejects inconsistent shapes and masks", "[gpu][attention]") {
  Gpu g;
  DTensor q = g.vk->upload(random_tensor({3, 8}, 1)), k = g.vk->upload(random_tensor({5, 8}, 2));
  DTensor v = g.vk->upload(random_tensor({5, 8}, 3));
  AttentionArgs a;
  a.heads = 3;  // 8 is not divisible by 3
  CHECK_THROWS_AS(g.vk->attention(q, k, v, a), AtlasError);
  a.heads = 2;
  a.mask.key_valid = {1, 1, 1};
  CHECK_THROWS_WITH(g.vk->attention(q, k, v, a), Catch::Contains("key_valid"));
  a.mask.key_valid.clear();
  a.mask.allowed.assign(3 * 4, 1);
  CHECK_THROWS_WITH(g.vk->attention(q, k, v, a), Catch::Contains("allowed"));
}
