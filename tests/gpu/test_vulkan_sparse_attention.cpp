// Vulkan sparse_attention (softmax over CSR nonzeros) against a naive double-precision loop
// and the CPU backend (the host reference), over random per-head patterns with empty rows,
// odd sizes, rows longer than the workgroup and Lq != Lk; more rows than one tile of 64 and heads
// wider than the tile kernel's 128 dimensions (the per-row kernel); and the Sparse
// Transformer's patterns (strided's column factor tiles rows by residue) against the host
// reference. Bounds (inputs in [-1, 1], d_head <= 130, <= 150 keys per row):
//   output |err| <= 1e-5, probabilities |err| <= 2e-6.
#include <cmath>

#include "tests/gpu/gpu_test_util.h"
#include "core/variants/sparse/sparse_attention.h"
#include "core/variants/sparse/sparse_pattern.h"
#include "tests/backend_ops/test_masks.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

using test_masks::random_pattern;

}  // namespace

TEST_CASE("Vulkan sparse_attention matches a naive loop and the CPU reference",
          "[vulkan][sparse]") {
  struct Case {
    int64_t lq, lk, heads, dh, dv;
    double density;
  };
  const Case cases[] = {{1, 1, 1, 1, 1, 1.0}, {13, 13, 3, 5, 5, 0.4}, {37, 37, 2, 7, 3, 0.2},
                        {9, 150, 2, 13, 70, 0.9}, {50, 21, 4, 6, 6, 0.6}, {150, 140, 2, 64, 64, 0.3},
                        {20, 30, 1, 130, 8, 0.5}};
  Gpu g;
  uint32_t seed = 7;
  for (const Case& c : cases) {
    INFO("case " << c.lq << "x" << c.lk << " heads " << c.heads);
    const Tensor q = random_tensor({c.lq, c.heads * c.dh}, seed++);
    const Tensor k = random_tensor({c.lk, c.heads * c.dh}, seed++);
    const Tensor v = random_tensor({c.lk, c.heads * c.dv}, seed++);
    std::vector<CsrPattern> pats;
    for (int64_t h = 0; h < c.heads; ++h) pats.push_back(random_pattern(c.lq, c.lk, c.density, seed++));
    const float scale = float(1.0 / std::sqrt(double(c.dh)));

    // Naive: per head and row, softmax of scale q.k over the row's keys, then sum p v.
    std::vector<double> out(size_t(c.lq * c.heads * c.dv), 0.0), probs;
    for (int64_t h = 0; h < c.heads; ++h) {
      const CsrPattern& p = pats[size_t(h)];
      for (int64_t i = 0; i < c.lq; ++i) {
        std::vector<double> s;
        for (int64_t n = p.indptr[size_t(i)]; n < p.indptr[size_t(i) + 1]; ++n) {
          double dot = 0;
          for (int64_t e = 0; e < c.dh; ++e)
            dot += double(q.data[size_t(i * c.heads * c.dh + h * c.dh + e)]) *
                   k.data[size_t(p.indices[size_t(n)] * c.heads * c.dh + h * c.dh + e)];
          s.push_back(scale * dot);
        }
        double mx = -INFINITY, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (size_t n = 0; n < s.size(); ++n) {
          const double w = s[n] / sum;
          probs.push_back(w);
          const int64_t j = p.indices[size_t(p.indptr[size_t(i)]) + n];
          for (int64_t d = 0; d < c.dv; ++d)
            out[size_t(i * c.heads * c.dv + h * c.dv + d)] += w * v.data[size_t(j * c.heads * c.dv + h * c.dv + d)];
        }
      }
    }
    const SparseAttentionResult r = sparse_attention(
        *g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), int(c.heads), scale, pats, true);
    require_close(g.vk->download(r.out).data, out, 1e-5, "sparse out");
    require_close(g.vk->download(r.probs).data, probs, 2e-6, "sparse probs");
    const SparseAttentionResult cr =
        sparse_attention(*g.cpu, g.cpu->upload(q), g.cpu->upload(k), g.cpu->upload(v), int(c.heads),
                         scale, pats, true);
    require_close(g.cpu->download(cr.out).data, out, 1e-5, "cpu sparse out");
    require_close(g.cpu->download(cr.probs).data, probs, 2e-6, "cpu sparse probs");
    const SparseAttentionResult untraced = sparse_attention(
        *g.vk, g.vk->upload(q), g.vk->upload(k), g.vk->upload(v), int(c.heads), scale, pats, false);
    CHECK(!untraced.probs);
    require_close(g.vk->download(untraced.out).data, out, 1e-5, "sparse out, no probs");
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("Vulkan sparse_attention on the Sparse Transformer's patterns equals the host reference",
          "[vulkan][sparse]") {
  Gpu g;
  const int64_t L = 300, H = 4, dh = 16;
  for (SparsePattern pattern : {SparsePattern::Strided, SparsePattern::Fixed}) {
    INFO("pattern " << int(pattern));
    SparseConfig s;
    s.pattern = pattern;
    s.combine = SparseCombine::PerHead;
    s.stride = 16;
    s.block = 32;
    s.summary = 4;
    AttentionMask mask;
    mask.causal = true;
    const std::vector<CsrPattern> pats = layer_patterns(s, L, 0, H, mask);
    const Tensor q = random_tensor({L, H * dh}, 3), k = random_tensor({L, H * dh}, 4), v = random_tensor({L, H * dh}, 5);
    std::vector<std::vector<float>> probs;
    const Tensor want = sparse_attention(q, k, v, int(H), 0.25f, pats, &probs);
    const SparseAttentionResult r = sparse_attention(*g.vk, g.vk->upload(q), g.vk->upload(k),
                                                     g.vk->upload(v), int(H), 0.25f, pats, true);
    require_close(g.vk->download(r.out).data, std::vector<double>(want.data.begin(), want.data.end()), 1e-5,
                  "tiles out");
    std::vector<double> all;
    for (const auto& p : probs) all.insert(all.end(), p.begin(), p.end());
    require_close(g.vk->download(r.probs).data, all, 2e-6, "tiles probs");
  }
  CHECK(g.vk->fallbacks().empty());
}
