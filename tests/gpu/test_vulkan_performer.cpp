// Vulkan performer_attention (FAVOR+) against a naive double-precision loop over seed 003's
// equations written here, and against the CPU backend's host reference, over odd sizes,
// feature counts not multiple of the workgroup, padding, causal and bidirectional (the
// linear-time KV path and the per-row path that also writes the implicit attention).
// Bounds (inputs in [-1, 1], features in [-1, 1], d_head <= 9, m <= 70):
//   output |err| <= 2e-5, implicit attention |err| <= 2e-6.
#include <cmath>

#include "core/variants/performer/performer_attention.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

struct NaivePerformer {
  std::vector<double> out, implicit;
};

// phi(x)_r = m^-1/2 exp(w_r . x' - |x'|^2/2 - shift), x' = x dk^-1/4; queries shift by their
// row's max of w_r . x', keys by the max over all keys; padded keys phi = 0.
NaivePerformer naive_performer(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w,
                               const PerformerArgs& a) {
  const int64_t H = a.heads, lq = q.shape[0], lk = k.shape[0], dk = q.shape[1] / H, dv = v.shape[1] / H,
                m = w.shape[1];
  NaivePerformer n;
  n.out.assign(size_t(lq * H * dv), 0.0);
  n.implicit.assign(size_t(H * lq * lk), 0.0);
  const double s = std::pow(double(dk), -0.25), norm = 1.0 / std::sqrt(double(m));
  for (int64_t h = 0; h < H; ++h) {
    auto project = [&](const Tensor& x, int64_t row, std::vector<double>& p) {
      double hn = 0;
      for (int64_t e = 0; e < dk; ++e) hn += std::pow(s * x.data[size_t(row * H * dk + h * dk + e)], 2);
      p.assign(size_t(m), 0.0);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t e = 0; e < dk; ++e)
          p[size_t(r)] += s * x.data[size_t(row * H * dk + h * dk + e)] * w.data[size_t((h * m + r) * dk + e)];
      return hn / 2;
    };
    std::vector<std::vector<double>> pq(static_cast<size_t>(lq)), pk(static_cast<size_t>(lk));
    for (int64_t i = 0; i < lq; ++i) {
      std::vector<double> p;
      const double hn = project(q, i, p);
      const double mx = *std::max_element(p.begin(), p.end());
      for (double& x : p) x = norm * std::exp(x - hn - mx);
      pq[size_t(i)] = p;
    }
    double global = -INFINITY;
    std::vector<double> hns(static_cast<size_t>(lk));
    for (int64_t j = 0; j < lk; ++j) {
      hns[size_t(j)] = project(k, j, pk[size_t(j)]);
      global = std::max(global, *std::max_element(pk[size_t(j)].begin(), pk[size_t(j)].end()));
    }
    for (int64_t j = 0; j < lk; ++j)
      for (double& x : pk[size_t(j)])
        x = (a.key_valid.empty() || a.key_valid[size_t(j)]) ? norm * std::exp(x - hns[size_t(j)] - global) : 0.0;
    for (int64_t i = 0; i < lq; ++i) {
      std::vector<double> row(static_cast<size_t>(lk), 0.0);
      double sum = 0;
      for (int64_t j = 0; j < lk; ++j) {
        if (a.causal && j > i) continue;
        for (int64_t r = 0; r < m; ++r) row[size_t(j)] += pq[size_t(i)][size_t(r)] * pk[size_t(j)][size_t(r)];
        sum += row[size_t(j)];
      }
      for (int64_t j = 0; j < lk; ++j) {
        if (sum > 0) row[size_t(j)] /= sum;
        n.implicit[size_t((h * lq + i) * lk + j)] = row[size_t(j)];
      }
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < lk; ++j) acc += row[size_t(j)] * v.data[size_t(j * H * dv + h * dv + c)];
        n.out[size_t(i * H * dv + h * dv + c)] = acc;
      }
    }
  }
  return n;
}

struct PerformerCase {
  const char* name;
  int64_t lq, lk, heads, dk, m;
  bool causal, padding, implicit;
};

}  // namespace

TEST_CASE("Vulkan performer_attention matches a naive FAVOR+ loop and the CPU reference",
          "[vulkan][performer]") {
  const PerformerCase cases[] = {
      // name                      lq  lk  H  dk   m  causal pad   implicit
      {"1x1",                       1,  1, 1,  1,  1, false, false, false},
      {"bidirectional kv path",    13, 13, 3,  5, 70, false, false, false},
      {"bidirectional padded",     17, 17, 2,  7, 16, false, true,  false},
      {"cross lengths",             9, 23, 2,  6, 33, false, true,  false},
      {"bidirectional implicit",   11, 11, 2,  9, 65, false, true,  true},
      {"causal",                   29, 29, 2,  4, 24, true,  false, false},
      {"causal padded implicit",   15, 15, 3,  8, 40, true,  true,  true},
  };
  Gpu g;
  uint32_t seed = 700;
  for (const PerformerCase& c : cases) {
    INFO("case " << c.name);
    const Tensor q = random_tensor({c.lq, c.heads * c.dk}, seed++), k = random_tensor({c.lk, c.heads * c.dk}, seed++);
    const Tensor v = random_tensor({c.lk, c.heads * c.dk}, seed++), w = random_tensor({c.heads, c.m, c.dk}, seed++);
    PerformerArgs a;
    a.heads = int(c.heads);
    a.causal = c.causal;
    a.want_implicit = c.implicit;
    if (c.padding) {
      a.key_valid.assign(size_t(c.lk), 1);
      a.key_valid[size_t(c.lk - 1)] = 0;
      if (c.lk > 3) a.key_valid[size_t(c.lk / 2)] = 0;
    }
    const NaivePerformer want = naive_performer(q, k, v, w, a);
    for (Backend* be : {g.vk.get(), g.cpu.get()}) {
      const std::string n = std::string(c.name) + (be == g.vk.get() ? " vulkan" : " cpu");
      const PerformerResult r =
          performer_attention(*be, be->upload(q), be->upload(k), be->upload(v), be->upload(w), a);
      require_close(be->download(r.out).data, want.out, 2e-5, n + " out");
      if (c.implicit) require_close(be->download(r.implicit).data, want.implicit, 2e-6, n + " implicit");
      else CHECK_FALSE(r.implicit);
    }
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan performer_attention names a shape mismatch", "[vulkan][performer]") {
  Gpu g;
  const DTensor q = g.vk->upload(Tensor({4, 6})), k = g.vk->upload(Tensor({5, 6}));
  PerformerArgs a;
  a.heads = 2;
  CHECK_THROWS_WITH(performer_attention(*g.vk, q, k, k, g.vk->upload(Tensor({2, 8, 2})), a),
                    Catch::Contains("features must be [heads, m >= 1, d_head]"));
  a.causal = true;
  CHECK_THROWS_WITH(performer_attention(*g.vk, q, k, k, g.vk->upload(Tensor({2, 8, 3})), a),
                    Catch::Contains("as many queries as keys"));
}
