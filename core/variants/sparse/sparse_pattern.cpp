// Sparse connectivity patterns as sets (seed 000, "Sparse Transformer", "Image Transformer"):
//   strided: A1_i = {max(0, i - l), ..., i},  A2_i = {j : (i - j) mod l = 0}
//   fixed:   A1_i = {j : floor(j / l) = floor(i / l)},  A2_i = {j : j mod l in [l - c, l - 1]}
//   local 1D (masked):   block b = floor(i / B) sees {j : (b - 1) B <= j <= i}
//   local 1D (unmasked): block b sees {j : b B - w <= j < (b + 1) B + w}
//   local 2D (masked):   t2t masked_local_attention_2d: query block qh x qw, flange fh above
//                        (qw + 2 fw wide), fw to the left, the block itself in raster order.
// Each row is emitted as disjoint runs (see sparse_pattern.h), so no set is ever dense.
#include "core/variants/sparse/sparse_pattern.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "core/tensor/error.h"

namespace atlas {
namespace {

int64_t pmod(int64_t a, int64_t p) { return ((a % p) + p) % p; }

void push(std::vector<KeyRun>& runs, int64_t lo, int64_t hi) {
  if (lo < hi) runs.push_back({lo, hi, 0, 0, 1});
}
void push_periodic(std::vector<KeyRun>& runs, int64_t lo, int64_t hi, int64_t period,
                   int64_t phase, int64_t width) {
  if (lo < hi) runs.push_back({lo, hi, period, pmod(phase, period), width});
}

template <class F>
void for_each_key(const KeyRun& r, F&& f) {
  if (r.period == 0) {
    for (int64_t j = r.lo; j < r.hi; ++j) f(j);
    return;
  }
  // First window start <= lo, then every period.
  for (int64_t ws = r.lo - pmod(r.lo - r.phase, r.period); ws < r.hi; ws += r.period)
    for (int64_t j = std::max(ws, r.lo), e = std::min(ws + r.width, r.hi); j < e; ++j) f(j);
}

}  // namespace

int64_t KeyRun::count_in(int64_t a, int64_t b) const {
  a = std::max(a, lo);
  b = std::min(b, hi);
  if (b <= a) return 0;
  if (period == 0) return b - a;
  // (j - phase) mod p = (j + s) mod p; count t in [a + s, b + s) with t mod p < width.
  const int64_t s = pmod(-phase, period);
  auto h = [&](int64_t y) { return (y / period) * width + std::min(width, y % period); };
  return h(b + s) - h(a + s);
}

PatternRows::PatternRows(const SparseConfig& s, int64_t length, int64_t layer, int64_t head,
                         bool causal)
    : s_(s), L_(length), causal_(causal) {
  if (length < 1) throw AtlasError("sparse pattern: length must be >= 1, got " + std::to_string(length));
  if (s.stride > 0) l_ = s.stride;
  else l_ = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(double(length)))));
  if (s.per_head_summary) off_ = (head * s.summary) % s.block;
  switch (s.combine) {
    case SparseCombine::Union: factor_ = 2; break;
    case SparseCombine::Interleave: factor_ = static_cast<int>(layer % 2); break;
    case SparseCombine::PerHead: factor_ = static_cast<int>(head % 2); break;
  }
}

std::string PatternRows::recipe() const {
  // Every field of SparseConfig the rows may read, resolved values included. The factor and the
  // summary shift only where row() reads them (strided and fixed; fixed), so the heads of a local
  // pattern, which all have the same rows, have the same recipe.
  const SparseConfig& s = s_;
  const bool factored = s.pattern == SparsePattern::Strided || s.pattern == SparsePattern::Fixed;
  std::string r = "pattern " + std::to_string(int(s.pattern));
  for (const int64_t x : {L_, l_, factored ? int64_t(factor_) : -1, s.pattern == SparsePattern::Fixed ? off_ : -1,
                          int64_t(causal_), s.stride, s.block, s.summary, s.block_length, s.filter_width,
                          s.query_h, s.query_w, s.flange_h, s.flange_w, s.image_width, s.image_channels})
    r += " " + std::to_string(x);
  return r;
}

void PatternRows::row(int64_t i, std::vector<KeyRun>& runs) const {
  runs.clear();
  const int64_t L = L_;
  switch (s_.pattern) {
    case SparsePattern::None:
      push(runs, 0, causal_ ? i + 1 : L);
      return;
    case SparsePattern::Strided: {
      const int64_t l = l_;
      if (causal_) {
        const int64_t t = std::max<int64_t>(0, i - l);
        if (factor_ != 1) push(runs, t, i + 1);
        // A2 without the part A1 already covers, so runs stay disjoint.
        if (factor_ == 1) push_periodic(runs, 0, i + 1, l, i, 1);
        if (factor_ == 2) push_periodic(runs, 0, t, l, i, 1);
      } else {
        // Non-causal extension: A1 = {j : |i - j| <= l}, A2 over both sides.
        const int64_t lo = std::max<int64_t>(0, i - l), hi = std::min(L, i + l + 1);
        if (factor_ != 1) push(runs, lo, hi);
        if (factor_ == 1) push_periodic(runs, 0, L, l, i, 1);
        if (factor_ == 2) {
          push_periodic(runs, 0, lo, l, i, 1);
          push_periodic(runs, hi, L, l, i, 1);
        }
      }
      return;
    }
    case SparsePattern::Fixed: {
      const int64_t l = s_.block, c = s_.summary;
      const int64_t b0 = (i / l) * l, b1 = std::min(L, b0 + l);
      const int64_t phase = l - c - off_;  // summary: ((j + off) mod l) >= l - c
      const int64_t end = causal_ ? i + 1 : L;
      if (factor_ != 1) push(runs, b0, causal_ ? i + 1 : b1);
      if (factor_ == 1) push_periodic(runs, 0, end, l, phase, c);
      if (factor_ == 2) {
        push_periodic(runs, 0, b0, l, phase, c);
        if (!causal_) push_periodic(runs, b1, L, l, phase, c);
      }
      return;
    }
    case SparsePattern::Local1D: {
      const int64_t B = s_.block_length, b0 = (i / B) * B;
      push(runs, std::max<int64_t>(0, b0 - B), i + 1);
      return;
    }
    case SparsePattern::Local1DUnmasked: {
      const int64_t B = s_.block_length, w = s_.filter_width, b0 = (i / B) * B;
      push(runs, std::max<int64_t>(0, b0 - w), std::min(L, b0 + B + w));
      return;
    }
    case SparsePattern::Local2D: {
      const int64_t W = s_.image_width, r = i / W, col = i % W;
      const int64_t R0 = (r / s_.query_h) * s_.query_h, C0 = (col / s_.query_w) * s_.query_w;
      const int64_t left = std::max<int64_t>(0, C0 - s_.flange_w);
      const int64_t block_end = std::min(W, C0 + s_.query_w);
      auto seg = [&](int64_t row, int64_t c_lo, int64_t c_hi) {
        push(runs, std::min(L, row * W + c_lo), std::min(L, row * W + c_hi));
      };
      // Top flange: fh rows above the block, qw + 2 fw columns wide.
      for (int64_t rr = std::max<int64_t>(0, R0 - s_.flange_h); rr < R0; ++rr)
        seg(rr, left, std::min(W, C0 + s_.query_w + s_.flange_w));
      // Block rows above the query: left flange + whole block row (adjacent, one run).
      for (int64_t rr = R0; rr < r; ++rr) seg(rr, left, block_end);
      // Query row: left flange + block up to the query itself.
      push(runs, r * W + left, i + 1);
      // Block rows below the query: left flange only (earlier in block generation order).
      for (int64_t rr = r + 1; rr < R0 + s_.query_h; ++rr) seg(rr, left, C0);
      return;
    }
  }
}

bool CsrPattern::contains(int64_t i, int64_t j) const {
  auto b = indices.begin() + indptr[static_cast<size_t>(i)];
  auto e = indices.begin() + indptr[static_cast<size_t>(i) + 1];
  return std::binary_search(b, e, static_cast<int32_t>(j));
}

CsrPattern build_csr(const PatternRows& p) {
  const int64_t L = p.length();
  if (L > INT32_MAX) throw AtlasError("sparse pattern: length too large for int32 key indices");
  CsrPattern csr;
  csr.rows = csr.cols = L;
  csr.indptr.assign(static_cast<size_t>(L) + 1, 0);
  std::vector<KeyRun> runs;
  for (int64_t i = 0; i < L; ++i) {
    p.row(i, runs);
    int64_t n = 0;
    for (const auto& r : runs) n += r.count_in(0, L);
    csr.indptr[static_cast<size_t>(i) + 1] = csr.indptr[static_cast<size_t>(i)] + n;
  }
  csr.indices.resize(static_cast<size_t>(csr.indptr.back()));
  for (int64_t i = 0; i < L; ++i) {
    p.row(i, runs);
    int32_t* out = csr.indices.data() + csr.indptr[static_cast<size_t>(i)];
    int32_t* w = out;
    for (const auto& r : runs) for_each_key(r, [&](int64_t j) { *w++ = static_cast<int32_t>(j); });
    std::sort(out, w);
  }
  return csr;
}

std::vector<size_t> first_equal_patterns(const std::vector<CsrPattern>& ps) {
  std::vector<size_t> first(ps.size());
  for (size_t h = 0; h < ps.size(); ++h) {
    first[h] = h;
    for (size_t g = 0; g < h; ++g) {
      if (first[g] != g || ps[g].rows != ps[h].rows || ps[g].cols != ps[h].cols) continue;
      const bool equal = !ps[g].recipe.empty() && !ps[h].recipe.empty()
                             ? ps[g].recipe == ps[h].recipe
                             : ps[g].indptr == ps[h].indptr && ps[g].indices == ps[h].indices;
      if (equal) {
        first[h] = g;
        break;
      }
    }
  }
  return first;
}

CsrPattern csr_union(const std::vector<CsrPattern>& ps) {
  if (ps.empty()) throw AtlasError("csr_union: no patterns");
  const std::vector<size_t> first = first_equal_patterns(ps);
  std::vector<const CsrPattern*> distinct;
  for (size_t h = 0; h < ps.size(); ++h)
    if (first[h] == h) distinct.push_back(&ps[h]);
  if (distinct.size() == 1) return *distinct[0];
  CsrPattern u;
  u.rows = ps[0].rows;
  u.cols = ps[0].cols;
  u.indptr.assign(static_cast<size_t>(u.rows) + 1, 0);
  std::vector<int32_t> row, merged;
  for (int64_t i = 0; i < u.rows; ++i) {  // rows are ascending and unique: merge them
    row.clear();
    for (const CsrPattern* p : distinct) {
      const auto b = p->indices.begin() + p->indptr[size_t(i)], e = p->indices.begin() + p->indptr[size_t(i) + 1];
      merged.clear();
      std::set_union(row.begin(), row.end(), b, e, std::back_inserter(merged));
      row.swap(merged);
    }
    u.indices.insert(u.indices.end(), row.begin(), row.end());
    u.indptr[size_t(i) + 1] = static_cast<int64_t>(u.indices.size());
  }
  return u;
}

PatternStats pattern_stats(const PatternRows& p) {
  PatternStats s;
  const int64_t L = p.length();
  s.length = L;
  s.min_row = L;
  std::vector<KeyRun> runs;
  for (int64_t i = 0; i < L; ++i) {
    p.row(i, runs);
    int64_t n = 0;
    for (const auto& r : runs) n += r.count_in(0, L);
    s.nnz += n;
    s.min_row = std::min(s.min_row, n);
    s.max_row = std::max(s.max_row, n);
  }
  s.density = double(s.nnz) / (double(L) * double(L));
  s.csr_bytes = 8.0 * double(L + 1) + 4.0 * double(s.nnz);
  return s;
}

Tensor pattern_tile(const PatternRows& p, const TileRequest& t) {
  if (t.rows < 1 || t.cols < 1 || t.rows > kMaxTileSide || t.cols > kMaxTileSide)
    throw AtlasError("pattern tile: rows and cols must be in 1.." + std::to_string(kMaxTileSide) +
                     ", got " + std::to_string(t.rows) + "x" + std::to_string(t.cols));
  if (t.zoom < 1) throw AtlasError("pattern tile: zoom must be >= 1, got " + std::to_string(t.zoom));
  if (t.r0 < 0 || t.c0 < 0) throw AtlasError("pattern tile: r0 and c0 must be >= 0");
  if (t.max_rows_per_pixel < 1) throw AtlasError("pattern tile: max_rows_per_pixel must be >= 1");
  const int64_t L = p.length(), z = t.zoom;
  Tensor out({t.rows, t.cols});
  const int64_t col_begin = t.c0 * z, col_end = std::min(L, (t.c0 + t.cols) * z);
  std::vector<double> acc(static_cast<size_t>(t.cols));
  std::vector<KeyRun> runs;
  for (int64_t y = 0; y < t.rows; ++y) {
    const int64_t R = (t.r0 + y) * z;
    if (R >= L || col_begin >= L) break;
    const int64_t nr = std::min(R + z, L) - R;
    const int64_t samples = std::min(nr, t.max_rows_per_pixel);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t m = 0; m < samples; ++m) {
      const int64_t i = samples == nr ? R + m : R + ((2 * m + 1) * nr) / (2 * samples);
      p.row(i, runs);
      for (const auto& r : runs) {
        const int64_t a = std::max(r.lo, col_begin), b = std::min(r.hi, col_end);
        if (a >= b) continue;
        for (int64_t x = a / z - t.c0, xe = (b - 1) / z - t.c0; x <= xe; ++x) {
          const int64_t c = (t.c0 + x) * z;
          acc[size_t(x)] += double(r.count_in(c, c + z));
        }
      }
    }
    for (int64_t x = 0; x < t.cols; ++x) {
      const int64_t c = (t.c0 + x) * z;
      const int64_t cells = std::min(c + z, L) - c;
      if (cells <= 0) break;
      out.data[size_t(y * t.cols + x)] = float(acc[size_t(x)] / (double(samples) * double(cells)));
    }
  }
  return out;
}

}  // namespace atlas
