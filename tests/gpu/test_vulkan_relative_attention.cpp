// Vulkan relative_attention op (Shaw relative positions, adaptive-span soft mask) against a naive
// double-precision loop written here from the papers' equations, and against the CPU
// backend (the host reference), over odd shapes, masks, key prefixes and both span modes.
// Bounds, stated per array (inputs in [-1, 1], d_head <= 13, Lk <= 70):
//   scores, key term: |err| <= 2e-6 + 2e-6 |want|     probabilities:  |err| <= 2e-6
//   output, value term: |err| <= 1e-5                  span mask:      |err| <= 1e-6
#include <cmath>

#include "core/variants/relative_attention/relative_attention_op.h"
#include "tests/backend_ops/test_masks.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct Naive {
  std::vector<double> out, probs, scores, key_term, value_term, span_mask;
};

// Shaw: e_ij = s (q_i.k_j + q_i.a^K_r), o_i = sum_j a_ij (v_j + a^V_r), r = clip(j - pos_i, k) + k.
// Span: m = clamp((R + z - x) / R, 0, 1), 0 for x > S, x = |pos_i - j|; inside: a ~ m exp(e);
// after: a = p m / (sum p m + 1e-8). pos_i = i + Lk - Lq.
Naive naive(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& ak,
            const Tensor& av, const RelativeAttentionArgs& a, bool shaw) {
  const int64_t H = a.attn.heads, lq = q.shape[0], lk = k.shape[0];
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H, kd = a.max_distance;
  Naive n;
  n.out.assign(size_t(lq * H * dv), 0.0);
  n.value_term.assign(size_t(H * lq * dv), 0.0);
  n.probs.assign(size_t(H * lq * lk), 0.0);
  n.scores.assign(size_t(H * lq * lk), -INFINITY);
  n.key_term.assign(size_t(H * lq * lk), 0.0);
  n.span_mask.assign(size_t(H * lq * lk), 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t pos = i + lk - lq;
      std::vector<double> e(size_t(lk), -INFINITY), m(size_t(lk), 0.0), w(size_t(lk), 0.0);
      std::vector<int64_t> r(static_cast<size_t>(lk));
      for (int64_t j = 0; j < lk; ++j) {
        r[size_t(j)] = std::max(-kd, std::min(kd, j - pos)) + kd;
        double qk = 0, qa = 0;
        for (int64_t d = 0; d < dh; ++d) {
          const double qd = q.data[size_t(i * H * dh + h * dh + d)];
          qk += qd * k.data[size_t(j * H * dh + h * dh + d)];
          if (shaw) qa += qd * ak.data[size_t(r[size_t(j)] * dh + d)];
        }
        const size_t at = size_t((h * lq + i) * lk + j);
        n.key_term[at] = a.attn.scale * qa;
        if (!a.attn.mask.is_allowed(i, j, lk)) continue;
        e[size_t(j)] = a.attn.scale * (qk + qa);
        n.scores[at] = e[size_t(j)];
        m[size_t(j)] = 1.0;
        if (a.span()) {
          const double x = double(std::abs(pos - j)), z = a.span_z[size_t(h * lq + i)];
          const double R = double(a.span_ramp), o = double(a.span_offset);  // o: distance convention
          m[size_t(j)] = x > double(a.span_max) ? 0.0 : std::clamp((R + z - (x - o)) / R, 0.0, 1.0);
        }
        n.span_mask[at] = m[size_t(j)];
      }
      double mx = -INFINITY;
      const bool after = a.span() && a.span_after;
      for (int64_t j = 0; j < lk; ++j)
        if (after ? !std::isinf(e[size_t(j)]) : m[size_t(j)] > 0) mx = std::max(mx, e[size_t(j)]);
      if (std::isinf(mx)) continue;  // no key: zero row
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) {
        if (std::isinf(e[size_t(j)])) continue;
        w[size_t(j)] = (after ? 1.0 : m[size_t(j)]) * std::exp(e[size_t(j)] - mx);
        sum += w[size_t(j)];
      }
      double msum = 0;
      for (int64_t j = 0; j < lk; ++j) {
        w[size_t(j)] /= sum;
        if (after) {
          w[size_t(j)] *= m[size_t(j)];
          msum += w[size_t(j)];
        }
      }
      if (after)
        for (double& x : w) x /= msum + 1e-8;
      for (int64_t j = 0; j < lk; ++j) n.probs[size_t((h * lq + i) * lk + j)] = w[size_t(j)];
      for (int64_t d = 0; d < dv; ++d) {
        double acc = 0, vt = 0;
        for (int64_t j = 0; j < lk; ++j) {
          acc += w[size_t(j)] * v.data[size_t(j * H * dv + h * dv + d)];
          if (shaw) vt += w[size_t(j)] * av.data[size_t(r[size_t(j)] * dv + d)];
        }
        n.out[size_t(i * H * dv + h * dv + d)] = acc + vt;
        n.value_term[size_t((h * lq + i) * dv + d)] = vt;
      }
    }
  return n;
}

struct RelativeCase {
  const char* name;
  int64_t lq, lk, heads, dh;
  bool shaw, span, after, causal, padding, pattern;
  int64_t max_distance;
};

}  // namespace

TEST_CASE("Vulkan relative_attention matches a naive loop and the CPU reference",
          "[vulkan][relative]") {
  const RelativeCase cases[] = {
      // name                   lq  lk  H  dh  shaw  span  after causal pad  pattern k
      {"shaw 1x1",               1,  1, 1,  1, true, false, false, false, false, false, 1},
      {"shaw odd",              13, 13, 3,  5, true, false, false, false, false, false, 2},
      {"shaw causal pad",       37, 37, 2,  7, true, false, false, true,  true,  false, 4},
      {"shaw long row",         11, 70, 2, 13, true, false, false, false, false, false, 3},
      {"shaw prefix causal",     9, 23, 2,  6, true, false, false, true,  false, false, 3},
      {"span inside",           29, 29, 3,  6, false, true, false, true,  false, false, 0},
      {"span after pattern",    17, 17, 2,  9, false, true, true,  false, true,  true,  0},
      {"shaw + span",           21, 21, 2,  8, true,  true, false, true,  true,  false, 5},
      {"shaw + span after",     15, 31, 3,  4, true,  true, true,  false, false, true,  2},
  };
  Gpu g;
  uint32_t seed = 100;
  for (const RelativeCase& c : cases) {
    INFO("case " << c.name);
    const int64_t rows = 2 * c.max_distance + 1;
    const Tensor q = random_tensor({c.lq, c.heads * c.dh}, seed++);
    const Tensor k = random_tensor({c.lk, c.heads * c.dh}, seed++);
    const Tensor v = random_tensor({c.lk, c.heads * c.dh}, seed++);
    const Tensor ak = random_tensor({rows, c.dh}, seed++), av = random_tensor({rows, c.dh}, seed++);
    RelativeAttentionArgs a;
    a.attn.heads = int(c.heads);
    a.attn.scale = float(1.0 / std::sqrt(double(c.dh)));
    a.attn.want_probs = a.attn.want_scores = true;
    a.attn.mask.causal = c.causal;
    a.attn.mask.causal_offset = c.lk - c.lq;
    if (c.padding)
      a.attn.mask.key_valid = c.lk > 3 ? test_masks::keys_without(c.lk, {c.lk - 1, c.lk / 2})
                                       : test_masks::keys_without(c.lk, {c.lk - 1});
    if (c.pattern) a.attn.mask.allowed = test_masks::band_with_holes(c.lq, c.lk, 6, 5);
    if (c.shaw) {
      a.max_distance = c.max_distance;
      a.want_terms = true;
    }
    if (c.span) {
      a.span_z = random_values(size_t(c.heads * c.lq), seed++, 0.0f, 12.0f);
      a.span_ramp = 4;
      a.span_max = 14;
      a.span_after = c.after;
      a.span_offset = c.heads % 2;  // the reference code's distance on the 3-head cases
      a.want_span_mask = true;
    }
    const Naive want = naive(q, k, v, ak, av, a, c.shaw);

    RelativeAttentionArgs va = a;
    if (c.shaw) {
      va.rel_k = g.vk->upload(ak);
      va.rel_v = g.vk->upload(av);
    }
    const RelativeAttentionResult r =
        relative_attention(*g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), va);
    const std::string n = c.name;
    require_close(g.vk->download(r.out).data, want.out, 1e-5, n + " out");
    require_close(g.vk->download(r.probs).data, want.probs, 2e-6, n + " probs");
    require_close(g.vk->download(r.scores).data, want.scores, rel_tol(want.scores, 2e-6, 2e-6), n + " scores");
    if (c.shaw) {
      require_close(g.vk->download(r.key_term).data, want.key_term, rel_tol(want.key_term, 2e-6, 2e-6), n + " key term");
      require_close(g.vk->download(r.value_term).data, want.value_term, 1e-5, n + " value term");
    } else {
      CHECK(!r.key_term);
    }
    if (c.span) require_close(g.vk->download(r.span_mask).data, want.span_mask, 1e-6, n + " span mask");

    // The CPU backend's op is the host reference the variants ran before: same oracle.
    RelativeAttentionArgs ca = a;
    if (c.shaw) {
      ca.rel_k = g.cpu->upload(ak);
      ca.rel_v = g.cpu->upload(av);
    }
    const RelativeAttentionResult cr =
        relative_attention(*g.cpu, g.cpu->upload(q), g.cpu->upload(k), g.cpu->upload(v), ca);
    require_close(g.cpu->download(cr.out).data, want.out, 1e-5, n + " cpu out");
    require_close(g.cpu->download(cr.probs).data, want.probs, 2e-6, n + " cpu probs");
  }
  CHECK(g.vk->fallbacks().empty());  // every case ran on the device
}

TEST_CASE("Vulkan relative_attention without traces writes only the output", "[vulkan][relative]") {
  Gpu g;
  const Tensor q = random_tensor({5, 6}, 1), k = random_tensor({5, 6}, 2), v = random_tensor({5, 6}, 3);
  const Tensor ak = random_tensor({3, 3}, 4), av = random_tensor({3, 3}, 5);
  RelativeAttentionArgs a;
  a.attn.heads = 2;
  a.attn.scale = 0.5f;
  a.max_distance = 1;
  const Naive want = naive(q, k, v, ak, av, a, false);
  const Naive want_shaw = naive(q, k, v, ak, av, a, true);
  a.rel_k = g.vk->upload(ak);
  a.rel_v = g.vk->upload(av);
  const RelativeAttentionResult r =
      relative_attention(*g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), a);
  CHECK(!r.probs);
  CHECK(!r.scores);
  CHECK(!r.key_term);
  require_close(g.vk->download(r.out).data, want_shaw.out, 1e-5, "untraced out");
  double diff = 0;  // the Shaw terms really changed the output
  for (size_t i = 0; i < want.out.size(); ++i) diff = std::max(diff, std::fabs(want.out[i] - want_shaw.out[i]));
  CHECK(diff > 1e-3);
}
