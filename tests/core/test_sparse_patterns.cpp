// Sparse patterns against their set definitions (seed 000 equations) evaluated with
// naive loops over (i, j); causality; reachability of the factorized patterns by BFS.
#include <catch2/catch.hpp>

#include <array>
#include <deque>
#include <functional>

#include "core/config/config.h"
#include "core/variants/sparse/sparse_pattern.h"

using namespace atlas;

namespace {

int64_t pm(int64_t a, int64_t p) { return ((a % p) + p) % p; }

// The seed 000 sets, written out directly. factor: 0 = A1, 1 = A2, 2 = union.
bool naive_strided(int64_t i, int64_t j, int64_t l, int factor, bool causal) {
  if (causal && j > i) return false;
  const bool a1 = causal ? (j >= std::max<int64_t>(0, i - l) && j <= i) : std::abs(i - j) <= l;
  const bool a2 = pm(i - j, l) == 0;
  return factor == 0 ? a1 : factor == 1 ? a2 : (a1 || a2);
}
bool naive_fixed(int64_t i, int64_t j, int64_t l, int64_t c, int64_t off, int factor, bool causal) {
  if (causal && j > i) return false;
  const bool a1 = j / l == i / l;
  const bool a2 = pm(j + off, l) >= l - c;  // off 0: j mod l in {l-c, ..., l-1}
  return factor == 0 ? a1 : factor == 1 ? a2 : (a1 || a2);
}

using Allowed = std::function<bool(int64_t, int64_t)>;

void check_against(const PatternRows& rows, int64_t L, const Allowed& ok) {
  CsrPattern csr = build_csr(rows);
  REQUIRE(csr.rows == L);
  int64_t naive_nnz = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) {
      const bool want = ok(i, j);
      naive_nnz += want;
      if (csr.contains(i, j) != want) {
        INFO("L " << L << " i " << i << " j " << j << " want " << want);
        REQUIRE(csr.contains(i, j) == want);
      }
    }
  CHECK(csr.nnz() == naive_nnz);
  for (int64_t i = 0; i < L; ++i)  // ascending, no duplicates
    for (int64_t n = csr.indptr[size_t(i)] + 1; n < csr.indptr[size_t(i) + 1]; ++n)
      REQUIRE(csr.indices[size_t(n - 1)] < csr.indices[size_t(n)]);
  CHECK(pattern_stats(rows).nnz == naive_nnz);
  // Tiles: zoom 1 is the 0/1 matrix, zoom 3 the mean over each 3x3 cell block.
  TileRequest t1{0, 0, L, L, 1};
  Tensor d1 = pattern_tile(rows, t1);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) REQUIRE(d1.data[size_t(i * L + j)] == (ok(i, j) ? 1.0f : 0.0f));
  const int64_t z = 3, n = (L + z - 1) / z;
  TileRequest t3{0, 0, n, n, z};
  Tensor d3 = pattern_tile(rows, t3);
  for (int64_t y = 0; y < n; ++y)
    for (int64_t x = 0; x < n; ++x) {
      double s = 0, cells = 0;
      for (int64_t i = y * z; i < std::min(L, y * z + z); ++i)
        for (int64_t j = x * z; j < std::min(L, x * z + z); ++j) {
          s += ok(i, j);
          cells += 1;
        }
      REQUIRE(d3.data[size_t(y * n + x)] == Approx(s / cells));
    }
}

SparseConfig with(SparsePattern p) {
  SparseConfig s;
  s.pattern = p;
  return s;
}

const int64_t kLengths[] = {1, 7, 16, 33, 50};

}  // namespace

TEST_CASE("strided pattern matches the seed 000 sets, both factors, causal and not", "[sparse]") {
  for (int64_t l : {1, 4, 5}) {
    for (int64_t L : kLengths)
      for (bool causal : {true, false})
        for (auto combine : {SparseCombine::Union, SparseCombine::PerHead, SparseCombine::Interleave})
          for (int64_t head : {0, 1}) {
            SparseConfig s = with(SparsePattern::Strided);
            s.stride = l;
            s.combine = combine;
            const int64_t layer = 3;  // interleave: odd layer uses A2
            PatternRows rows(s, L, layer, head, causal);
            const int factor = combine == SparseCombine::Union       ? 2
                               : combine == SparseCombine::PerHead   ? int(head)
                                                                     : 1;
            INFO("l " << l << " L " << L << " causal " << causal << " factor " << factor);
            REQUIRE(rows.factor() == factor);
            check_against(rows, L, [&](int64_t i, int64_t j) {
              return naive_strided(i, j, l, factor, causal);
            });
          }
  }
}

TEST_CASE("strided stride auto is ceil(sqrt(L))", "[sparse]") {
  SparseConfig s = with(SparsePattern::Strided);
  CHECK(PatternRows(s, 100, 0, 0, true).stride() == 10);
  CHECK(PatternRows(s, 101, 0, 0, true).stride() == 11);
  CHECK(PatternRows(s, 1, 0, 0, true).stride() == 1);
}

TEST_CASE("fixed pattern matches the seed 000 sets, with per-head summary offsets", "[sparse]") {
  for (auto [l, c] : {std::pair<int64_t, int64_t>{8, 3}, {5, 1}, {4, 4}})
    for (int64_t L : kLengths)
      for (bool causal : {true, false})
        for (bool per_head : {false, true})
          for (auto combine : {SparseCombine::Union, SparseCombine::PerHead})
            for (int64_t head : {0, 1, 2, 3}) {
              SparseConfig s = with(SparsePattern::Fixed);
              s.block = l;
              s.summary = c;
              s.per_head_summary = per_head;
              s.combine = combine;
              PatternRows rows(s, L, 0, head, causal);
              const int factor = combine == SparseCombine::Union ? 2 : int(head % 2);
              const int64_t off = per_head ? (head * c) % l : 0;
              INFO("l " << l << " c " << c << " L " << L << " causal " << causal << " head "
                        << head << " per_head " << per_head);
              // Structured bindings are copied into the capture: clang 14 cannot capture them.
              check_against(rows, L, [&, l = l, c = c](int64_t i, int64_t j) {
                return naive_fixed(i, j, l, c, off, factor, causal);
              });
            }
}

TEST_CASE("per-head summary offsets give distinct summary columns", "[sparse]") {
  SparseConfig s = with(SparsePattern::Fixed);
  s.block = 16;
  s.summary = 4;
  s.per_head_summary = true;
  s.combine = SparseCombine::PerHead;
  // Heads 1 and 3 use A2; their summary columns (last row sees all earlier columns) differ.
  CsrPattern h1 = build_csr(PatternRows(s, 32, 0, 1, true));
  CsrPattern h3 = build_csr(PatternRows(s, 32, 0, 3, true));
  // Head 1: offset 4 -> (j + 4) mod 16 >= 12 -> j mod 16 in 8..11; head 3: offset 12 -> 0..3.
  CHECK(h1.contains(31, 8));
  CHECK(h1.contains(31, 27));
  CHECK_FALSE(h1.contains(31, 15));
  CHECK(h3.contains(31, 0));
  CHECK(h3.contains(31, 19));
  CHECK_FALSE(h3.contains(31, 8));
}

TEST_CASE("local 1D masked and unmasked match their definitions", "[sparse]") {
  for (int64_t B : {1, 4, 7})
    for (int64_t L : kLengths) {
      SparseConfig s = with(SparsePattern::Local1D);
      s.block_length = B;
      INFO("B " << B << " L " << L);
      check_against(PatternRows(s, L, 0, 0, true), L, [&](int64_t i, int64_t j) {
        // Previous block and the own block up to the query itself.
        return j <= i && j >= (i / B - 1) * B;
      });
      for (int64_t w : {0, 3}) {
        SparseConfig u = with(SparsePattern::Local1DUnmasked);
        u.block_length = B;
        u.filter_width = w;
        check_against(PatternRows(u, L, 0, 0, false), L, [&](int64_t i, int64_t j) {
          const int64_t b0 = (i / B) * B;
          return j >= b0 - w && j < b0 + B + w;
        });
      }
    }
}

namespace {
bool naive_local2d(int64_t i, int64_t j, int64_t W, int64_t qh, int64_t qw, int64_t fh, int64_t fw) {
  const int64_t r = i / W, R0 = (r / qh) * qh, C0 = ((i % W) / qw) * qw;
  const int64_t rj = j / W, cj = j % W;
  const bool top = rj >= R0 - fh && rj < R0 && cj >= C0 - fw && cj < C0 + qw + fw;
  const bool left = rj >= R0 && rj < R0 + qh && cj >= C0 - fw && cj < C0;
  const bool block = rj >= R0 && rj < R0 + qh && cj >= C0 && cj < C0 + qw && j <= i;
  return top || left || block;
}
// Generation order of the Image Transformer's 2D local attention: blocks in raster order,
// pixels in raster order inside a block.
std::array<int64_t, 4> gen_order(int64_t i, int64_t W, int64_t qh, int64_t qw) {
  const int64_t r = i / W, c = i % W;
  return {r / qh, c / qw, r % qh, c % qw};
}
}  // namespace

TEST_CASE("local 2D masked matches the query block + flange definition", "[sparse]") {
  struct Case { int64_t W, qh, qw, fh, fw, L; };
  for (Case k : {Case{8, 2, 4, 2, 4, 64}, Case{10, 3, 4, 1, 2, 57}, Case{6, 2, 3, 3, 4, 40},
                 Case{5, 1, 5, 0, 0, 25}}) {
    SparseConfig s = with(SparsePattern::Local2D);
    s.image_width = k.W;
    s.query_h = k.qh;
    s.query_w = k.qw;
    s.flange_h = k.fh;
    s.flange_w = k.fw;
    INFO("W " << k.W << " q " << k.qh << "x" << k.qw << " f " << k.fh << "x" << k.fw);
    PatternRows rows(s, k.L, 0, 0, true);
    check_against(rows, k.L, [&](int64_t i, int64_t j) {
      return naive_local2d(i, j, k.W, k.qh, k.qw, k.fh, k.fw);
    });
    // Causal in generation order: no query sees a key generated after it.
    CsrPattern csr = build_csr(rows);
    for (int64_t i = 0; i < k.L; ++i)
      for (int64_t n = csr.indptr[size_t(i)]; n < csr.indptr[size_t(i) + 1]; ++n)
        REQUIRE(gen_order(csr.indices[size_t(n)], k.W, k.qh, k.qw) <= gen_order(i, k.W, k.qh, k.qw));
  }
}

TEST_CASE("no causal pattern lets a query see a future key", "[sparse]") {
  std::vector<SparseConfig> configs;
  for (auto p : {SparsePattern::Strided, SparsePattern::Fixed, SparsePattern::Local1D})
    for (auto comb : {SparseCombine::Union, SparseCombine::PerHead, SparseCombine::Interleave}) {
      SparseConfig s = with(p);
      s.stride = 6;
      s.block = 6;
      s.summary = 2;
      s.block_length = 6;
      s.per_head_summary = true;
      s.combine = comb;
      configs.push_back(s);
    }
  for (const auto& s : configs)
    for (int64_t L : {13, 61})
      for (int64_t head : {0, 1, 2})
        for (int64_t layer : {0, 1}) {
          CsrPattern csr = build_csr(PatternRows(s, L, layer, head, true));
          for (int64_t i = 0; i < L; ++i)
            for (int64_t n = csr.indptr[size_t(i)]; n < csr.indptr[size_t(i) + 1]; ++n)
              REQUIRE(csr.indices[size_t(n)] <= i);
        }
}

namespace {
// Hops from i to every j over the graph whose edges are query -> allowed key, using either
// factor at every hop (the layers/heads of a factorized model). -1 = unreachable.
std::vector<int64_t> hops_from(int64_t src, const CsrPattern& a1, const CsrPattern& a2) {
  std::vector<int64_t> d(size_t(a1.rows), -1);
  std::deque<int64_t> q{src};
  d[size_t(src)] = 0;
  while (!q.empty()) {
    const int64_t i = q.front();
    q.pop_front();
    for (const CsrPattern* p : {&a1, &a2})
      for (int64_t n = p->indptr[size_t(i)]; n < p->indptr[size_t(i) + 1]; ++n) {
        const int64_t j = p->indices[size_t(n)];
        if (d[size_t(j)] < 0) {
          d[size_t(j)] = d[size_t(i)] + 1;
          q.push_back(j);
        }
      }
  }
  return d;
}
}  // namespace

TEST_CASE("factorized patterns connect every j <= i within p + 1 hops", "[sparse]") {
  const int p = 2;
  for (auto pat : {SparsePattern::Strided, SparsePattern::Fixed})
    for (int64_t L : {30, 67}) {
      SparseConfig s = with(pat);
      s.stride = 5;
      s.block = 8;
      s.summary = 2;
      s.combine = SparseCombine::PerHead;
      CsrPattern a1 = build_csr(PatternRows(s, L, 0, 0, true));
      CsrPattern a2 = build_csr(PatternRows(s, L, 0, 1, true));
      for (int64_t i = 0; i < L; ++i) {
        auto d = hops_from(i, a1, a2);
        for (int64_t j = 0; j <= i; ++j) {
          INFO("pattern " << int(pat) << " L " << L << " i " << i << " j " << j);
          REQUIRE(d[size_t(j)] >= 0);
          REQUIRE(d[size_t(j)] <= p + 1);
        }
      }
    }
}

TEST_CASE("patterns at 1M positions: exact statistics and zoomed tiles without a dense matrix",
          "[sparse]") {
  const int64_t L = 1 << 20;
  SparseConfig s = with(SparsePattern::Strided);
  s.stride = 1024;
  s.combine = SparseCombine::Union;
  PatternRows rows(s, L, 0, 0, true);
  PatternStats st = pattern_stats(rows);
  // Sample rows against the naive set (the full 1M x 1M check would take too long).
  std::vector<KeyRun> runs;
  for (int64_t i : {int64_t(0), int64_t(5), int64_t(1024), int64_t(5000), L - 1}) {
    rows.row(i, runs);
    int64_t n = 0;
    for (auto& r : runs) n += r.count_in(0, L);
    int64_t naive = 0;
    for (int64_t j = 0; j <= i; ++j) naive += naive_strided(i, j, 1024, 2, true);
    REQUIRE(n == naive);
  }
  CHECK(st.max_row <= 1025 + 1024);
  CHECK(st.nnz > L * 1000);
  TileRequest t{0, 0, 512, 512, 2048};
  Tensor tile = pattern_tile(rows, t);
  REQUIRE(tile.shape == Shape{512, 512});
  // Upper triangle empty; the diagonal pixel of the band is the densest.
  CHECK(tile.data[size_t(10 * 512 + 11)] == 0.0f);
  CHECK(tile.data[size_t(100 * 512 + 100)] > tile.data[size_t(100 * 512 + 50)]);
  CHECK(tile.data[size_t(100 * 512 + 50)] == Approx(1.0 / 1024).epsilon(0.01));
}

TEST_CASE("bad tile requests are rejected", "[sparse]") {
  SparseConfig s = with(SparsePattern::Local1D);
  PatternRows rows(s, 100, 0, 0, true);
  CHECK_THROWS_WITH(pattern_tile(rows, TileRequest{0, 0, 0, 10, 1}), Catch::Contains("rows and cols"));
  CHECK_THROWS_WITH(pattern_tile(rows, TileRequest{0, 0, 10, 10, 0}), Catch::Contains("zoom"));
  CHECK_THROWS_WITH(PatternRows(s, 0, 0, 0, true), Catch::Contains("length"));
}

TEST_CASE("csr_union holds every key of any head once, ascending", "[sparse]") {
  // Two heads' rows by hand, one head repeated (the heads of one factor are equal copies).
  auto csr = [](std::vector<std::vector<int32_t>> rows) {
    CsrPattern p;
    p.rows = int64_t(rows.size());
    p.cols = 10;
    p.indptr.push_back(0);
    for (const auto& r : rows) {
      p.indices.insert(p.indices.end(), r.begin(), r.end());
      p.indptr.push_back(int64_t(p.indices.size()));
    }
    return p;
  };
  const CsrPattern a = csr({{0, 2, 4}, {}, {1, 9}, {3}});
  const CsrPattern b = csr({{1, 2, 5}, {7}, {}, {3}});
  CHECK(first_equal_patterns({a, b, a, b}) == std::vector<size_t>{0, 1, 0, 1});
  const CsrPattern u = csr_union({a, b, a, b});
  CHECK(u.indptr == std::vector<int64_t>{0, 5, 6, 8, 9});
  CHECK(u.indices == std::vector<int32_t>{0, 1, 2, 4, 5, 7, 1, 9, 3});
  const CsrPattern same = csr_union({a, a});
  CHECK(same.indptr == a.indptr);
  CHECK(same.indices == a.indices);
  CHECK_THROWS(csr_union({}));
}
