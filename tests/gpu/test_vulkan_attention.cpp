// Vulkan attention against the naive double-precision oracle (tests/backend_ops/
// naive_attention.h: scores, masks, softmax, P V per head) and against the CPU backend where
// only the Vulkan backend has something to get wrong: rows of 4096 keys and queries,
// probabilities split over binding windows, the host fallback for wide heads, shape errors.
// Masks and odd shapes on every backend are the attention case of the backend-ops harness
// (tests/backend_ops/attention_op.cpp, run by test_backend_ops.cpp).
#include <cmath>

#include "tests/backend_ops/naive_attention.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;
using atlas::op_test::AttentionCase;
using atlas::op_test::AttentionOracle;
using atlas::op_test::attention_args;
using atlas::op_test::attention_oracle;

namespace {

void run_case(Gpu& g, const AttentionCase& c, uint32_t seed) {
  CAPTURE(c.heads, c.lq, c.lk, c.dh, c.dv, c.causal, c.offset, c.key_valid, c.allowed, c.probs,
          c.scores, c.scale);
  const Tensor q = random_tensor({c.lq, c.heads * c.dh}, seed, -1.5f, 1.5f);
  const Tensor k = random_tensor({c.lk, c.heads * c.dh}, seed + 1, -1.5f, 1.5f);
  const Tensor v = random_tensor({c.lk, c.heads * c.dv}, seed + 2);
  const AttentionArgs args = attention_args(c, seed + 3);
  const AttentionOracle o = attention_oracle(q, k, v, args);

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
