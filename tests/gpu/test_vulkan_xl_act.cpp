// Vulkan Transformer-XL attention, ACT step and row slice / concat against naive
// double-precision loops written here from the papers' equations (Dai et al. 2019 eq. for
// A^rel with terms a-d; Graves 2016 halting), and against the CPU backend's host references,
// over odd shapes (not multiples of the workgroup), memory lengths, same_length and clamping.
// Bounds (inputs in [-1, 1], d_head <= 13, Lk <= 90):
//   scores, terms: |err| <= 2e-6 + 2e-6 |want|    probabilities: |err| <= 2e-6
//   output:        |err| <= 1e-5                  ACT state, y, weights: |err| <= 1e-6
#include <cmath>

#include "core/variants/transformer_xl/xl_attention_op.h"
#include "core/variants/universal/act_step.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct NaiveXl {
  std::vector<double> out, probs, scores, a, b, c, d;
};

// Keys are m = Lk - Lq memory rows then the segment; query i sits at p = m + i, sees j <= p
// (and j > p - mem_len with same_length); distance p - j, clamped; rk row = distance.
NaiveXl naive_xl(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& rk,
                 const Tensor& u, const Tensor& vb, const XlAttentionArgs& x) {
  const int64_t H = x.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, D = H * dh;
  NaiveXl n;
  const size_t total = size_t(H * lq * lk);
  n.out.assign(size_t(lq * D), 0.0);
  n.probs.assign(total, 0.0);
  n.scores.assign(total, -INFINITY);
  n.a = n.b = n.c = n.d = std::vector<double>(total, 0.0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < lq; ++i) {
      const int64_t p = lk - lq + i;
      std::vector<double> w(size_t(lk), 0.0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < lk; ++j) {
        if (j > p || (x.same_length && j <= p - x.mem_len)) continue;
        const int64_t dist = x.clamp_len >= 0 ? std::min(p - j, x.clamp_len) : p - j;
        double ta = 0, tb = 0, tc = 0, td = 0;
        for (int64_t e = 0; e < dh; ++e) {
          const double qe = q.data[size_t(i * D + h * dh + e)], ke = k.data[size_t(j * D + h * dh + e)];
          const double re = rk.data[size_t(dist * D + h * dh + e)];
          ta += qe * ke;
          tb += qe * re;
          tc += u.data[size_t(h * dh + e)] * ke;
          td += vb.data[size_t(h * dh + e)] * re;
        }
        const size_t at = size_t((h * lq + i) * lk + j);
        n.a[at] = x.scale * ta, n.b[at] = x.scale * tb, n.c[at] = x.scale * tc, n.d[at] = x.scale * td;
        n.scores[at] = x.scale * (ta + tb + tc + td);
        mx = std::max(mx, n.scores[at]);
      }
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) {
        const double s = n.scores[size_t((h * lq + i) * lk + j)];
        if (!std::isinf(s)) sum += w[size_t(j)] = std::exp(s - mx);
      }
      for (int64_t j = 0; j < lk; ++j) n.probs[size_t((h * lq + i) * lk + j)] = w[size_t(j)] / sum;
      for (int64_t e = 0; e < dh; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < lk; ++j) acc += w[size_t(j)] / sum * v.data[size_t(j * D + h * dh + e)];
        n.out[size_t(i * D + h * dh + e)] = acc;
      }
    }
  return n;
}

struct XlCase {
  const char* name;
  int64_t lq, mem, heads, dh;
  int64_t mem_len, clamp_len;
  bool same_length;
};

}  // namespace

TEST_CASE("Vulkan xl_attention matches a naive loop over the four terms and the CPU reference",
          "[vulkan][xl]") {
  const XlCase cases[] = {
      // name                 lq  mem  H  dh  mem_len clamp same_length
      {"1x1 no memory",        1,  0, 1,  1,   0,   -1, false},
      {"odd no memory",       13,  0, 3,  5,   0,   -1, false},
      {"memory",              17, 17, 2,  7,  17,   -1, false},
      {"long memory odd",     11, 79, 2, 13,  79,   -1, false},
      {"same_length",         20, 20, 3,  4,  20,   -1, true},
      {"clamped",             15, 30, 2,  6,  30,    9, false},
      {"clamped same_length", 70, 19, 1,  8,  19,    5, true},
  };
  Gpu g;
  uint32_t seed = 500;
  for (const XlCase& c : cases) {
    INFO("case " << c.name);
    const int64_t lk = c.lq + c.mem, D = c.heads * c.dh;
    const int64_t rows = c.clamp_len >= 0 ? std::min(lk - 1, c.clamp_len) + 1 : lk;
    const Tensor q = random_tensor({c.lq, D}, seed++), k = random_tensor({lk, D}, seed++);
    const Tensor v = random_tensor({lk, D}, seed++), rk = random_tensor({rows, D}, seed++);
    const Tensor u = random_tensor({c.heads, c.dh}, seed++), vb = random_tensor({c.heads, c.dh}, seed++);
    XlAttentionArgs a;
    a.heads = int(c.heads);
    a.scale = float(1.0 / std::sqrt(double(c.dh)));
    a.mem_len = c.mem_len;
    a.same_length = c.same_length;
    a.clamp_len = c.clamp_len;
    a.want_probs = a.want_terms = true;
    const NaiveXl want = naive_xl(q, k, v, rk, u, vb, a);

    for (Backend* be : {g.vk.get(), g.cpu.get()}) {
      const std::string n = std::string(c.name) + (be == g.vk.get() ? " vulkan" : " cpu");
      const XlAttentionResult r = xl_attention(*be, be->upload(q), be->upload(k), be->upload(v),
                                               be->upload(rk), be->upload(u), be->upload(vb), a);
      const std::vector<Tensor> got =
          be->download_all({r.out, r.probs, r.scores, r.term_a, r.term_b, r.term_c, r.term_d});
      require_close(got[0].data, want.out, 1e-5, n + " out");
      require_close(got[1].data, want.probs, 2e-6, n + " probs");
      require_close(got[2].data, want.scores, rel_tol(want.scores, 2e-6, 2e-6), n + " scores");
      require_close(got[3].data, want.a, rel_tol(want.a, 2e-6, 2e-6), n + " term a");
      require_close(got[4].data, want.b, rel_tol(want.b, 2e-6, 2e-6), n + " term b");
      require_close(got[5].data, want.c, rel_tol(want.c, 2e-6, 2e-6), n + " term c");
      require_close(got[6].data, want.d, rel_tol(want.d, 2e-6, 2e-6), n + " term d");
    }
  }
  CHECK(g.vk->fallbacks().empty());  // every case ran on the device
}

TEST_CASE("Vulkan xl_attention without traces writes only the output and probabilities",
          "[vulkan][xl]") {
  Gpu g;
  const Tensor q = random_tensor({5, 6}, 1), k = random_tensor({9, 6}, 2), v = random_tensor({9, 6}, 3);
  const Tensor rk = random_tensor({9, 6}, 4), u = random_tensor({2, 3}, 5), vb = random_tensor({2, 3}, 6);
  XlAttentionArgs a;
  a.heads = 2;
  a.scale = 0.5f;
  a.mem_len = 4;
  const XlAttentionResult r = xl_attention(*g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v),
                                           g.vk->upload(rk), g.vk->upload(u), g.vk->upload(vb), a);
  CHECK_FALSE(r.probs);
  CHECK_FALSE(r.scores);
  CHECK_FALSE(r.term_a);
  const NaiveXl want = naive_xl(q, k, v, rk, u, vb, a);
  require_close(g.vk->download(r.out).data, want.out, 1e-5, "no-trace out");
  CHECK_THROWS_WITH(
      xl_attention(*g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v),
                   g.vk->upload(Tensor({3, 6})), g.vk->upload(u), g.vk->upload(vb), a),
      Catch::Contains("rk needs a row for every distance up to 8"));
}

namespace {

// One ACT step by Graves' rule, written here: h = sigmoid(logit); a running position halts
// when cum + h >= threshold (or on the last step) with weight R = 1 - cum, else w = h.
struct NaiveAct {
  std::vector<double> halting, y, state, weights;
};
NaiveAct naive_act(const Tensor& halting, const Tensor& y, const Tensor& state, const Tensor& logit,
                   const Tensor& t, const ActStepArgs& a) {
  const int64_t L = y.shape[0], d = y.shape[1];
  NaiveAct n{to_double(halting.data), to_double(y.data), to_double(state.data),
             std::vector<double>(size_t(2 * L), 0.0)};
  for (int64_t i = 0; i < L; ++i) {
    double* hs = n.halting.data() + 4 * i;
    if (hs[3] != 0) continue;
    const double h = 1.0 / (1.0 + std::exp(-double(logit.data[size_t(i)])));
    hs[2] += 1;
    double w = h;
    if (hs[0] + h >= a.threshold || a.last_step) {
      w = hs[1] = 1 - hs[0];
      hs[0] = 1;
      hs[3] = 1;
    } else {
      hs[0] += h;
    }
    n.weights[size_t(2 * i)] = h;
    n.weights[size_t(2 * i + 1)] = w;
    for (int64_t c = 0; c < d; ++c) {
      const size_t o = size_t(i * d + c);
      n.y[o] = a.interpolate ? w * t.data[o] + (1 - w) * n.y[o] : n.y[o] + w * t.data[o];
      n.state[o] = t.data[o];
    }
  }
  return n;
}

}  // namespace

TEST_CASE("Vulkan act_step matches Graves' halting rule over several steps", "[vulkan][act]") {
  const int64_t L = GENERATE(1, 7, 130), d = GENERATE(int64_t(0), int64_t(1), int64_t(13));
  const bool interpolate = GENERATE(true, false);
  CAPTURE(L, d, interpolate);
  Gpu g;
  Tensor halting({L, 4});  // cum, remainder, steps, halted: all start at 0
  Tensor y({L, d}), state = random_tensor({L, d}, 9);
  DTensor dh = g.vk->upload(halting), dy = g.vk->upload(y), ds = g.vk->upload(state);
  ActStepArgs a;
  a.interpolate = interpolate;
  const int steps = 5;
  for (int s = 0; s < steps; ++s) {
    a.last_step = s == steps - 1;
    // Logits spread so that some positions halt at each step and some run to the last.
    const Tensor logit = random_tensor({L, 1}, 40 + uint32_t(s), -4.0f, 1.5f);
    const Tensor t = random_tensor({L, d}, 60 + uint32_t(s));
    const NaiveAct want = naive_act(halting, y, state, logit, t, a);
    const ActStepResult r = act_step(*g.vk, {dh, dy, ds}, g.vk->upload(logit), g.vk->upload(t), a);
    const std::vector<Tensor> got = g.vk->download_all({r.next.halting, r.next.y, r.next.state, r.weights});
    const std::string n = "step " + std::to_string(s);
    require_close(got[0].data, want.halting, 1e-6, n + " halting");
    require_close(got[1].data, want.y, 1e-6, n + " y");
    require_close(got[2].data, want.state, 1e-6, n + " state");
    require_close(got[3].data, want.weights, 1e-6, n + " weights");
    // The CPU backend (host reference) agrees with the same oracle.
    const ActStepResult c =
        act_step(*g.cpu, {g.cpu->upload(halting), g.cpu->upload(y), g.cpu->upload(state)},
                 g.cpu->upload(logit), g.cpu->upload(t), a);
    require_close(g.cpu->download(c.next.halting).data, want.halting, 1e-6, n + " cpu halting");
    // Carry the device's state forward; the host copies follow it for the next oracle step.
    halting = got[0], y = got[1], state = got[2];
    dh = r.next.halting, dy = r.next.y, ds = r.next.state;
  }
  for (int64_t i = 0; i < L; ++i) CHECK(halting.data[size_t(4 * i + 3)] == 1.0f);  // all halted
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan slice_rows and concat_rows copy on the device", "[vulkan][rows]") {
  Gpu g;
  const Tensor a = random_tensor({7, 5}, 1), b = random_tensor({3, 5}, 2);
  const DTensor da = g.vk->upload(a), db = g.vk->upload(b);
  const uint64_t before = g.vk->submission_count();
  const DTensor cat = g.vk->concat_rows(da, db);
  const DTensor mid = g.vk->slice_rows(cat, 4, 5);   // rows 4..6 of a, 0..1 of b
  const DTensor again = g.vk->concat_rows(mid, mid);  // reads what the copies just wrote
  const DTensor none = g.vk->concat_rows(g.vk->upload(Tensor({0, 5})), db);
  const std::vector<Tensor> got = g.vk->download_all({cat, mid, again, none});
  CHECK(g.vk->submission_count() - before <= 2);  // the uploads' batch and the download's
  std::vector<float> want_cat(a.data.begin(), a.data.end());
  want_cat.insert(want_cat.end(), b.data.begin(), b.data.end());
  CHECK(got[0].data == want_cat);
  const std::vector<float> want_mid(want_cat.begin() + 20, want_cat.begin() + 45);
  CHECK(got[1].data == want_mid);
  std::vector<float> want_again = want_mid;
  want_again.insert(want_again.end(), want_mid.begin(), want_mid.end());
  CHECK(got[2].data == want_again);
  CHECK(got[3].data == b.data);
  CHECK(g.vk->download(g.vk->slice_rows(da, 7, 0)).data.empty());
  CHECK_THROWS_WITH(g.vk->slice_rows(da, 5, 3), Catch::Contains("rows [5, 8) are not inside [7, 5]"));
  CHECK_THROWS_WITH(g.vk->concat_rows(da, g.vk->upload(Tensor({1, 4}))), Catch::Contains("same number of columns"));
  CHECK(g.vk->fallbacks().empty());
}
