// Sparse attention in dense tiles (core/variants/sparse/block_sparse_attention.h) against a
// double-precision loop over each row's nonzeros written here: outputs and probabilities for the
// Sparse Transformer's patterns (fixed, strided per factor and as a union, causal, with padding),
// random CSR patterns of every density (tiles and per-nonzero groups), empty rows and
// rectangular shapes; and the row grouping worked by hand for strided's column factor.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "core/tensor/error.h"
#include "core/variants/sparse/block_sparse_attention.h"
#include "core/variants/sparse/sparse_attention.h"
#include "tests/backend_ops/op_case.h"

using namespace atlas;

namespace {

struct SparseOracle {
  Tensor out;
  std::vector<std::vector<double>> probs;  // per head, aligned with the CSR
};

// softmax over row i's own keys of scale q_i . k_j, in double, then the weighted sum of values.
SparseOracle naive_block_sparse(const Tensor& q, const Tensor& k, const Tensor& v, int64_t H,
                                double scale, const std::vector<CsrPattern>& pats) {
  const int64_t L = q.shape[0], dk = q.shape[1] / H, dv = v.shape[1] / H;
  SparseOracle o{Tensor({L, H * dv}), {}};
  for (int64_t h = 0; h < H; ++h) {
    const CsrPattern& p = pats[size_t(h)];
    std::vector<double> probs(size_t(p.nnz()));
    for (int64_t i = 0; i < L; ++i) {
      const int64_t b = p.indptr[size_t(i)], e = p.indptr[size_t(i) + 1];
      double mx = -INFINITY;
      std::vector<double> s;
      for (int64_t n = b; n < e; ++n) {
        const int64_t j = p.indices[size_t(n)];
        double d = 0;
        for (int64_t t = 0; t < dk; ++t)
          d += double(q.data[size_t((i * H + h) * dk + t)]) * k.data[size_t((j * H + h) * dk + t)];
        s.push_back(d * scale);
        mx = std::max(mx, s.back());
      }
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int64_t n = b; n < e; ++n) {
        const int64_t j = p.indices[size_t(n)];
        probs[size_t(n)] = s[size_t(n - b)] / z;
        for (int64_t t = 0; t < dv; ++t)
          o.out.data[size_t((i * H + h) * dv + t)] +=
              float(probs[size_t(n)] * v.data[size_t((j * H + h) * dv + t)]);
      }
    }
    o.probs.push_back(std::move(probs));
  }
  return o;
}

void check_block_sparse_against_naive(const std::vector<CsrPattern>& pats, int64_t lk, int64_t dk,
                                      int64_t dv, uint32_t seed) {
  const int64_t H = int64_t(pats.size()), L = pats[0].rows;
  // Inputs in [-2, 2]: scores up to 4 d_k / sqrt(d_k), peaked softmax rows included.
  const Tensor q = op_test::random_tensor({L, H * dk}, seed, -2, 2),
               k = op_test::random_tensor({lk, H * dk}, seed + 1, -2, 2),
               v = op_test::random_tensor({lk, H * dv}, seed + 2, -2, 2);
  const float scale = 1.0f / std::sqrt(float(dk));
  std::vector<std::vector<float>> probs;
  const Tensor got = block_sparse_attention(q, k, v, int(H), scale, pats, &probs);
  const SparseOracle want = naive_block_sparse(q, k, v, H, scale, pats);
  REQUIRE(got.shape == want.out.shape);
  int64_t bad = 0;
  for (size_t n = 0; n < got.data.size(); ++n)
    if (std::abs(got.data[n] - want.out.data[n]) > 2e-5f * (1 + std::abs(want.out.data[n]))) ++bad;
  CHECK(bad == 0);
  int64_t bad_probs = 0;
  for (int64_t h = 0; h < H; ++h) {
    REQUIRE(probs[size_t(h)].size() == want.probs[size_t(h)].size());
    for (size_t n = 0; n < probs[size_t(h)].size(); ++n)
      if (std::abs(probs[size_t(h)][n] - want.probs[size_t(h)][n]) > 1e-6) ++bad_probs;
  }
  CHECK(bad_probs == 0);
  // Without probabilities: the same outputs.
  const Tensor again = block_sparse_attention(q, k, v, int(H), scale, pats);
  CHECK(again.data == got.data);
}

CsrPattern random_csr(int64_t rows, int64_t cols, double density, std::mt19937& g) {
  std::bernoulli_distribution keep(density);
  CsrPattern p;
  p.rows = rows;
  p.cols = cols;
  p.indptr.push_back(0);
  for (int64_t i = 0; i < rows; ++i) {
    if (i % 7 != 3)  // every seventh row from 3 on is empty
      for (int64_t j = 0; j < cols; ++j)
        if (keep(g)) p.indices.push_back(int32_t(j));
    p.indptr.push_back(int64_t(p.indices.size()));
  }
  return p;
}

std::vector<CsrPattern> preset_patterns(SparsePattern pattern, SparseCombine combine, int64_t L, int64_t H,
                                        bool pad) {
  SparseConfig s;
  s.pattern = pattern;
  s.combine = combine;
  s.stride = 16;
  s.block = 32;
  s.summary = 4;
  AttentionMask mask;
  mask.causal = true;
  if (pad) {
    mask.key_valid.assign(size_t(L), 1);
    mask.key_valid[5] = mask.key_valid[size_t(L - 2)] = 0;
  }
  return layer_patterns(s, L, 0, H, mask);
}

}  // namespace

TEST_CASE("block-sparse attention equals the per-row loop on the Sparse Transformer's patterns",
          "[sparse][block]") {
  SECTION("fixed, one factor per head, padding, length not a multiple of the group") {
    check_block_sparse_against_naive(
        preset_patterns(SparsePattern::Fixed, SparseCombine::PerHead, 300, 4, true), 300, 16, 8, 1);
  }
  SECTION("fixed, union of the factors") {
    check_block_sparse_against_naive(
        preset_patterns(SparsePattern::Fixed, SparseCombine::Union, 200, 2, false), 200, 8, 8, 2);
  }
  SECTION("strided, one factor per head (the column factor groups rows by residue)") {
    const auto pats = preset_patterns(SparsePattern::Strided, SparseCombine::PerHead, 333, 2, false);
    CHECK(group_rows(pats[1]).period == 16);
    check_block_sparse_against_naive(pats, 333, 16, 16, 3);
  }
  SECTION("strided, union of the factors") {
    check_block_sparse_against_naive(
        preset_patterns(SparsePattern::Strided, SparseCombine::Union, 257, 2, true), 257, 8, 4, 4);
  }
}

TEST_CASE("block-sparse attention on random patterns: dense tiles, per-nonzero groups, empty rows",
          "[sparse][block]") {
  std::mt19937 g(11);
  // Rectangular (more keys than queries), densities on both sides of kMinTileDensity.
  for (double density : {0.01, 0.05, 0.3, 1.0}) {
    INFO("density " << density);
    std::vector<CsrPattern> pats;
    for (int h = 0; h < 3; ++h) pats.push_back(random_csr(150, 190, density * (1 + 0.2 * h), g));
    check_block_sparse_against_naive(pats, 190, 12, 20, uint32_t(density * 1000) + 5);
  }
  // Every row empty: zero output, no probabilities.
  CsrPattern empty;
  empty.rows = 70;
  empty.cols = 70;
  empty.indptr.assign(71, 0);
  const Tensor q = op_test::random_tensor({70, 8}, 2);
  const Tensor out = block_sparse_attention(q, q, q, 1, 0.5f, {empty});
  CHECK(std::all_of(out.data.begin(), out.data.end(), [](float x) { return x == 0.0f; }));
}

TEST_CASE("block-sparse rows of strided's column factor are grouped by residue (worked by hand)",
          "[sparse][block]") {
  // L 256, stride 16, causal column factor: row i sees j <= i with (i - j) mod 16 = 0, so
  // nnz = 16 (1 + ... + 16) = 2176. Consecutive groups of 64 rows see every column up to their
  // last row: 64 (64 + 128 + 192 + 256) = 40960 score cells. Grouped by residue, each of the 16
  // groups is one residue's 16 rows and sees that residue's 16 columns: 16 x 16 x 16 = 4096.
  CsrPattern p;
  p.rows = p.cols = 256;
  p.indptr.push_back(0);
  for (int64_t i = 0; i < 256; ++i) {
    for (int64_t j = i % 16; j <= i; j += 16) p.indices.push_back(int32_t(j));
    p.indptr.push_back(int64_t(p.indices.size()));
  }
  REQUIRE(p.nnz() == 2176);
  const RowGrouping r = group_rows(p);
  CHECK(r.period == 16);
  CHECK(r.tile_cells == 4096);
  CHECK(r.union_keys == 256);
  CHECK(r.starts.size() == 17);
  REQUIRE(r.order.size() == 256);
  CHECK(r.order[0] == 0);
  CHECK(r.order[1] == 16);
  CHECK(r.order[16] == 1);
  // A block-local pattern keeps consecutive rows, in groups of 128: each tile of 16 rows touches
  // only the four 16-key blocks of its own 64 keys, so the kernel computes 16 tiles x 16 x 64
  // cells whatever the group size, and groups of 128 pack no more keys per row than groups of 64
  // (2 x 128 = 4 x 64) with half the groups' bookkeeping.
  CsrPattern local;
  local.rows = local.cols = 256;
  local.indptr.push_back(0);
  for (int64_t i = 0; i < 256; ++i) {
    for (int64_t j = i / 64 * 64; j < i / 64 * 64 + 64; ++j) local.indices.push_back(int32_t(j));
    local.indptr.push_back(int64_t(local.indices.size()));
  }
  const RowGrouping lr = group_rows(local);
  CHECK(lr.period == 0);
  CHECK(lr.tile_cells == 16 * 16 * 64);
  CHECK(lr.union_keys == 256);
  CHECK(lr.starts == std::vector<int64_t>{0, 128, 256});
}

TEST_CASE("block-sparse plans are shared by recipe, kept across calls, and never confuse two patterns",
          "[sparse][block]") {
  SparseConfig s;
  s.pattern = SparsePattern::Strided;
  s.combine = SparseCombine::PerHead;
  s.stride = 16;
  AttentionMask causal;
  causal.causal = true;
  const std::vector<CsrPattern> pats = layer_patterns(s, 300, 0, 4, causal);
  // Heads 0 and 2 (window factor) and 1 and 3 (column factor) are copies with equal recipes.
  REQUIRE(!pats[0].recipe.empty());
  CHECK(pats[0].recipe == pats[2].recipe);
  CHECK(pats[0].recipe != pats[1].recipe);
  CHECK(first_equal_patterns(pats) == std::vector<size_t>{0, 1, 0, 1});
  // A pattern without a recipe is compared by its nonzeros.
  CsrPattern anonymous = pats[1];
  anonymous.recipe.clear();
  CHECK(first_equal_patterns({pats[0], pats[1], anonymous}) == std::vector<size_t>{0, 1, 1});
  // Another length, stride, mask rule or padding: another recipe.
  AttentionMask padded = causal;
  padded.key_valid.assign(300, 1);
  padded.key_valid[7] = 0;
  AttentionMask padded_elsewhere = padded;
  padded_elsewhere.key_valid[7] = 1;
  padded_elsewhere.key_valid[8] = 0;
  SparseConfig wider = s;
  wider.stride = 17;
  for (const CsrPattern& other :
       {layer_patterns(s, 301, 0, 4, causal)[0], layer_patterns(wider, 300, 0, 4, causal)[0],
        layer_patterns(s, 300, 0, 4, AttentionMask{})[0], layer_patterns(s, 300, 0, 4, padded)[0],
        layer_patterns(s, 300, 0, 4, padded_elsewhere)[0]})
    CHECK(other.recipe != pats[0].recipe);
  CHECK(layer_patterns(s, 300, 0, 4, padded)[0].recipe != layer_patterns(s, 300, 0, 4, padded_elsewhere)[0].recipe);

  // Run after run with cached plans: the same outputs, bit for bit, and each against the loop,
  // alternating two padded variants of the same config (one recipe each).
  const Tensor q = op_test::random_tensor({300, 4 * 16}, 41, -2, 2),
               k = op_test::random_tensor({300, 4 * 16}, 42, -2, 2),
               v = op_test::random_tensor({300, 4 * 16}, 43, -2, 2);
  const Tensor first = block_sparse_attention(q, k, v, 4, 0.25f, pats);
  for (int round = 0; round < 2; ++round) {
    CHECK(block_sparse_attention(q, k, v, 4, 0.25f, pats).data == first.data);
    check_block_sparse_against_naive(layer_patterns(s, 300, 0, 4, padded), 300, 16, 16,
                                     50 + uint32_t(round));
    check_block_sparse_against_naive(layer_patterns(s, 300, 0, 4, padded_elsewhere), 300, 16, 16,
                                     60 + uint32_t(round));
  }
  // A pattern edited without clearing its recipe (a caller's bug) is not given the cached plan
  // of the original when its rows changed: the plan cache compares the rows' extents.
  std::vector<CsrPattern> edited = pats;
  for (CsrPattern& p : edited) {
    p.indices.resize(size_t(p.indptr[1]));  // keep row 0, empty every other row
    std::fill(p.indptr.begin() + 2, p.indptr.end(), p.indptr[1]);
  }
  check_block_sparse_against_naive(edited, 300, 16, 16, 70);
}

TEST_CASE("block-sparse attention refuses shapes that do not fit", "[sparse][block][errors]") {
  const Tensor q = op_test::random_tensor({10, 8}, 1), k = op_test::random_tensor({12, 8}, 2);
  CsrPattern p;
  p.rows = 10;
  p.cols = 10;  // the keys are 12
  p.indptr.assign(11, 0);
  CHECK_THROWS_AS(block_sparse_attention(q, k, k, 2, 1.0f, {p, p}), AtlasError);
  p.cols = 12;
  CHECK_THROWS_AS(block_sparse_attention(q, k, k, 2, 1.0f, {p}), AtlasError);  // one per head
  CHECK_THROWS_AS(block_sparse_attention(q, k, k, 3, 1.0f, {p, p, p}), AtlasError);  // 8 % 3
}
