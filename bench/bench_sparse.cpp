// Sparse attention kernels against the machine's dense GEMM rate, measured in the same run.
// Patterns of the Sparse Transformer at L = 4096 and 16384 (8 heads of 64, causal): fixed
// (l 128, c 32, one factor per head: the sparse-fixed-enwik8 preset), fixed as a union of the
// factors, and strided (l 128, one factor per head). For each: the per-nonzero host reference
// (sparse_attention) and the dense-tile kernel the CPU backend runs (block_sparse_attention),
// as GFLOP/s counted on the nonzeros only (2 nnz (d_k + d_v) per head), and that rate as a
// fraction of float32 GEMM ([L, 512] x [512, 512] through the CPU backend's linear). The kernel
// is measured with its plans kept between calls (the patterns carry recipes, as layer_patterns
// gives them to a model's layers) and planned anew every call.
// With --backend vulkan: the Vulkan backend's sparse_attention (upload of the patterns, dispatch,
// download of the output) against the same backend's linear op ([L, 512] x [512, 512]).
// Usage: bench_sparse [--lengths 4096,16384] [--skip-reference] [--only TEXT (cases whose name has it)]
//                     [--backend cpu|vulkan]   (figures in docs/PERFORMANCE.md)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "core/backend/backend.h"
#include "core/variants/sparse/block_sparse_attention.h"
#include "core/variants/sparse/sparse_attention.h"
#include "gpu/vulkan_backend.h"

using namespace atlas;

namespace {

constexpr int64_t kHeads = 8, kHeadDim = 64;

struct Case {
  const char* name;
  SparsePattern pattern;
  SparseCombine combine;
};

std::vector<CsrPattern> patterns(const Case& c, int64_t L) {
  SparseConfig s;
  s.pattern = c.pattern;
  s.combine = c.combine;
  s.block = 128;
  s.summary = 32;
  s.stride = 128;
  AttentionMask mask;
  mask.causal = true;
  return layer_patterns(s, L, 0, kHeads, mask);
}

Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t(shape);
  std::mt19937 g(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (float& x : t.data) x = n(g);
  return t;
}

// The median over enough runs to fill about half a second (at least 5, at most 100): a 5 ms
// kernel measured three times moved by 15 % from run to run on this machine.
template <class F>
double median_of_enough(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const double once = bench::ms_since(t0);
  return bench::median_ms(int(std::clamp(500.0 / std::max(once, 0.01), 5.0, 100.0)), f);
}

// Waits for a recording backend's work by reading the result back (the Vulkan backend; the GEMM
// baseline reads its output back the same way); the CPU backend has finished already.
void finish(Backend& be, const DTensor& result) {
  if (be.name().rfind("cpu", 0) != 0) be.download(result);
}

double gemm_gflops(Backend& be, int64_t rows) {
  const DTensor x = be.upload(random_tensor({rows, 512}, 1)), w = be.upload(random_tensor({512, 512}, 2));
  const double ms = median_of_enough([&] { finish(be, be.linear(x, w, {})); });
  return 2.0 * double(rows) * 512 * 512 / (ms * 1e-3) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> lengths = {4096, 16384};
  bool reference = true;
  std::string only, backend = "cpu";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--lengths") && i + 1 < argc) {
      lengths.clear();
      std::stringstream ss(argv[++i]);
      for (std::string item; std::getline(ss, item, ',');) lengths.push_back(std::stoll(item));
    } else if (!std::strcmp(argv[i], "--skip-reference")) {
      reference = false;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--backend") && i + 1 < argc) {
      backend = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_sparse [--lengths 4096,16384] [--skip-reference] [--only TEXT] [--backend cpu|vulkan]\n");
      return 2;
    }
  }
  const Case cases[] = {{"fixed l 128 c 32, per head (enwik8)", SparsePattern::Fixed, SparseCombine::PerHead},
                        {"fixed l 128 c 32, union", SparsePattern::Fixed, SparseCombine::Union},
                        {"strided l 128, per head", SparsePattern::Strided, SparseCombine::PerHead}};
  const std::unique_ptr<Backend> be = backend == "vulkan" ? make_vulkan_backend(VulkanOptions{}) : make_cpu_backend();
  std::printf("backend: %s\n\n", be->name().c_str());
  std::printf("| pattern | L | nnz (all heads) | GEMM GFLOP/s | per-nonzero host reference: ms, GFLOP/s (of GEMM) | the backend's kernel: ms, GFLOP/s (of GEMM) | the same, planned every call | speed-up |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int64_t L : lengths) {
    const double gemm = gemm_gflops(*be, L);
    const Tensor q = random_tensor({L, kHeads * kHeadDim}, 3), k = random_tensor({L, kHeads * kHeadDim}, 4),
                 v = random_tensor({L, kHeads * kHeadDim}, 5);
    const float scale = 1.0f / std::sqrt(float(kHeadDim));
    for (const Case& c : cases) {
      if (std::string(c.name).find(only) == std::string::npos) continue;
      const std::vector<CsrPattern> pats = patterns(c, L);
      double nnz = 0;
      for (const CsrPattern& p : pats) nnz += double(p.nnz());
      const double flops = 2.0 * nnz * 2 * kHeadDim;
      double tiles_ms = 0;
      if (backend == "vulkan") {
        const DTensor dq = be->upload(q), dk = be->upload(k), dv = be->upload(v);
        tiles_ms = bench::median_ms(3, [&] {
          finish(*be, sparse_attention(*be, dq, dk, dv, int(kHeads), scale, pats, false).out);
        });
      } else {
        tiles_ms = median_of_enough([&] { block_sparse_attention(q, k, v, int(kHeads), scale, pats); });
      }
      const double tiles = flops / (tiles_ms * 1e-3) / 1e9;
      // The CPU kernel keeps a pattern's plan (block_sparse_plan.h) for the next call with the same
      // recipe, as a model's layers do; planned anew each call, the recipes cleared:
      std::string planning_cell = "-";
      if (backend != "vulkan") {
        std::vector<CsrPattern> anonymous = pats;
        for (CsrPattern& p : anonymous) p.recipe.clear();
        const double ms = median_of_enough([&] { block_sparse_attention(q, k, v, int(kHeads), scale, anonymous); });
        char cell[96];
        std::snprintf(cell, sizeof cell, "%.0f ms, %.1f (%.0f %%)", ms, flops / (ms * 1e-3) / 1e9,
                      100 * flops / (ms * 1e-3) / 1e9 / gemm);
        planning_cell = cell;
      }
      char ref_cell[96] = "not run";
      double ref_ms = 0;
      if (reference) {
        ref_ms = bench::median_ms(1, [&] { sparse_attention(q, k, v, int(kHeads), scale, pats); });
        const double ref = flops / (ref_ms * 1e-3) / 1e9;
        std::snprintf(ref_cell, sizeof ref_cell, "%.0f ms, %.1f (%.0f %%)", ref_ms, ref, 100 * ref / gemm);
      }
      std::printf("| %s | %lld | %.3g | %.0f | %s | %.0f ms, %.1f (%.0f %%) | %s | %s |\n", c.name, (long long)L, nnz,
                  gemm, ref_cell, tiles_ms, tiles, 100 * tiles / gemm, planning_cell.c_str(),
                  reference ? (std::to_string(int(std::lround(ref_ms / tiles_ms))) + "x").c_str() : "");
      std::fflush(stdout);
    }
  }
  return 0;
}
