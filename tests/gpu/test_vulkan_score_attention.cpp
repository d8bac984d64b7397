// Vulkan score_attention (seed 004's dot, general, cosine, location and additive scores)
// against a naive double-precision loop written here from the equations in core/backend/backend.h,
// and against the CPU backend's host reference, over odd shapes, causal / padding / pattern
// masks (including rows with no allowed key) and heads wider than the workgroup.
// Bounds (inputs in [-1, 1], weights in [-0.5, 0.5], d_head <= 70, Lk <= 70):
//   scores: |err| <= 4e-6 + 4e-6 |want|   probabilities: |err| <= 4e-6   output: |err| <= 1e-5
#include <cmath>

#include "core/variants/score_functions/score_attention.h"
#include "core/variants/score_functions/score_functions.h"
#include "tests/backend_ops/test_masks.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct NaiveScore {
  std::vector<double> out, probs, scores;
};

NaiveScore naive_score(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                       const Tensor& w1, const Tensor& w2, const Tensor& va, const ScoreAttentionArgs& a) {
  const int64_t H = a.attn.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, D = H * dh;
  NaiveScore n;
  n.out.assign(size_t(lq * D), 0.0);
  n.probs.assign(size_t(H * lq * lk), 0.0);
  n.scores.assign(size_t(H * lq * lk), -INFINITY);
  auto Q = [&](int64_t i, int64_t h, int64_t e) { return double(q.data[size_t(i * D + h * dh + e)]); };
  auto K = [&](int64_t j, int64_t h, int64_t e) { return double(k.data[size_t(j * D + h * dh + e)]); };
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        if (!a.attn.mask.is_allowed(i, j, lk)) continue;
        double e = 0;
        switch (a.function) {
          case ScoreFunction::Dot:
            for (int64_t x = 0; x < dh; ++x) e += Q(i, h, x) * K(j, h, x);
            break;
          case ScoreFunction::General:
            for (int64_t x = 0; x < dh; ++x)
              for (int64_t y = 0; y < dh; ++y) e += Q(i, h, x) * w.data[size_t((h * dh + x) * dh + y)] * K(j, h, y);
            break;
          case ScoreFunction::Cosine: {
            double nq = 0, nk = 0;
            for (int64_t x = 0; x < dh; ++x) e += Q(i, h, x) * K(j, h, x), nq += Q(i, h, x) * Q(i, h, x), nk += K(j, h, x) * K(j, h, x);
            e *= a.strength / std::max(std::sqrt(nq * nk), 1e-8);
            break;
          }
          case ScoreFunction::Location:
            for (int64_t x = 0; x < dh; ++x) e += w.data[size_t((h * w.shape[1] + j) * dh + x)] * Q(i, h, x);
            break;
          default: {  // additive
            const int64_t da = w1.shape[1];
            for (int64_t b = 0; b < da; ++b) {
              double s = 0;
              for (int64_t x = 0; x < dh; ++x)
                s += w1.data[size_t((h * da + b) * dh + x)] * Q(i, h, x) + w2.data[size_t((h * da + b) * dh + x)] * K(j, h, x);
              e += va.data[size_t(h * da + b)] * std::tanh(s);
            }
          }
        }
        n.scores[size_t((h * lq + i) * lk + j)] = e;
        mx = std::max(mx, e);
      }
      if (std::isinf(mx)) continue;  // no allowed key: a zero row
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const double s = n.scores[size_t((h * lq + i) * lk + j)];
        if (!std::isinf(s)) sum += n.probs[size_t((h * lq + i) * lk + j)] = std::exp(s - mx);
      }
      for (int64_t j = 0; j < lk; ++j) n.probs[size_t((h * lq + i) * lk + j)] /= sum;
      for (int64_t x = 0; x < dh; ++x) {
        double acc = 0;
        for (int64_t j = 0; j < lk; ++j) acc += n.probs[size_t((h * lq + i) * lk + j)] * v.data[size_t(j * D + h * dh + x)];
        n.out[size_t(i * D + h * dh + x)] = acc;
      }
    }
  return n;
}

struct ScoreCase {
  const char* name;
  ScoreFunction f;
  int64_t lq, lk, heads, dh;
  bool causal, padding, pattern;
};

}  // namespace

TEST_CASE("Vulkan score_attention matches a naive loop for every score function", "[vulkan][score]") {
  const ScoreCase cases[] = {
      // name                    function                  lq  lk  H  dh  causal pad  pattern
      {"dot 1x1",                ScoreFunction::Dot,        1,  1, 1,  1, false, false, false},
      {"dot causal pad",         ScoreFunction::Dot,       13, 13, 3,  5, true,  true,  false},
      {"general odd",            ScoreFunction::General,   11, 17, 2,  7, false, true,  false},
      {"general wide head",      ScoreFunction::General,    5,  9, 1, 70, true,  false, false},
      {"cosine pattern",         ScoreFunction::Cosine,    17, 17, 2,  9, false, false, true},
      {"location prefix causal", ScoreFunction::Location,   9, 23, 2,  6, true,  false, false},
      {"additive",               ScoreFunction::Additive,  15, 15, 2,  8, true,  true,  false},
      {"additive long row",      ScoreFunction::Additive,   7, 70, 3,  4, false, false, true},
  };
  Gpu g;
  uint32_t seed = 900;
  for (const ScoreCase& c : cases) {
    INFO("case " << c.name);
    const int64_t D = c.heads * c.dh, da = 11, P = c.lk + 3;
    const Tensor q = random_tensor({c.lq, D}, seed++), k = random_tensor({c.lk, D}, seed++);
    const Tensor v = random_tensor({c.lk, D}, seed++);
    Tensor w, w1, w2, va;
    if (c.f == ScoreFunction::General) w = random_tensor({c.heads, c.dh, c.dh}, seed++, -0.5f, 0.5f);
    if (c.f == ScoreFunction::Location) w = random_tensor({c.heads, P, c.dh}, seed++, -0.5f, 0.5f);
    if (c.f == ScoreFunction::Additive) {
      w1 = random_tensor({c.heads, da, c.dh}, seed++, -0.5f, 0.5f);
      w2 = random_tensor({c.heads, da, c.dh}, seed++, -0.5f, 0.5f);
      va = random_tensor({c.heads, da}, seed++, -0.5f, 0.5f);
    }
    ScoreAttentionArgs a;
    a.function = c.f;
    a.strength = 4.0f;
    a.attn.heads = int(c.heads);
    a.attn.want_probs = a.attn.want_scores = true;
    a.attn.mask.causal = c.causal;
    a.attn.mask.causal_offset = c.lk - c.lq;
    // With causal, query 0 has no key once key 0 is padding: a zero row.
    if (c.padding) a.attn.mask.key_valid = test_masks::keys_without(c.lk, {0, c.lk / 2});
    if (c.pattern) a.attn.mask.allowed = test_masks::band_with_holes(c.lq, c.lk, 5, 4);
    const NaiveScore want = naive_score(q, k, v, w, w1, w2, va, a);
    for (Backend* be : {g.vk.get(), g.cpu.get()}) {
      const std::string n = std::string(c.name) + (be == g.vk.get() ? " vulkan" : " cpu");
      ScoreAttentionArgs ba = a;
      if (w.numel()) ba.w = be->upload(w);
      if (w1.numel()) ba.w1 = be->upload(w1), ba.w2 = be->upload(w2), ba.v_a = be->upload(va);
      const AttentionResult r =
          score_attention(*be, be->upload(q), be->upload(k), be->upload(v), ba);
      const std::vector<Tensor> got = be->download_all({r.out, r.probs, r.scores});
      require_close(got[0].data, want.out, 1e-5, n + " out");
      require_close(got[1].data, want.probs, 4e-6, n + " probs");
      require_close(got[2].data, want.scores, rel_tol(want.scores, 4e-6, 4e-6), n + " scores");
    }
  }
  CHECK(g.vk->fallbacks().empty());  // every case ran on the device
}

TEST_CASE("Vulkan score_attention beyond the kernel's head size runs on the host, visibly",
          "[vulkan][score]") {
  Gpu g;
  const Tensor q = random_tensor({3, 300}, 1), k = random_tensor({4, 300}, 2), v = random_tensor({4, 300}, 3);
  ScoreAttentionArgs a;
  a.function = ScoreFunction::Dot;
  a.attn.heads = 1;
  a.attn.want_probs = true;
  const AttentionResult r =
      score_attention(*g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), a);
  const NaiveScore want = naive_score(q, k, v, {}, {}, {}, {}, a);
  require_close(g.vk->download(r.probs).data, want.probs, 4e-6, "wide head probs");
  REQUIRE(g.vk->fallbacks().size() == 1);
  CHECK(g.vk->fallbacks()[0].find("score_attention: q [3, 300]") == 0);
}
