#pragma once
// Connectivity patterns of the sparse variants as sets, never as dense L x L
// matrices. Sources: seed 000 (The Transformer Family), "Sparse Transformer" and "Image
// Transformer"; openai/sparse_attention, tensorflow/tensor2tensor common_attention.py.
//   strided: A1_i = {t, ..., i}, t = max(0, i - l);  A2_i = {j : (i - j) mod l = 0}
//   fixed:   A1_i = {j : floor(j / l) = floor(i / l)}; A2_i = {j : j mod l in {l-c, ..., l-1}}
//   causal models intersect every set with {j <= i}.
// A row is a list of disjoint KeyRuns, so counts over any column range are O(runs): that is
// what makes statistics and zoomed-out tiles of a 1M-position pattern instant.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/tensor/tensor.h"

namespace atlas {

// Keys j in [lo, hi) with ((j - phase) mod period) < width; period 0 = every j in [lo, hi).
struct KeyRun {
  int64_t lo = 0, hi = 0;
  int64_t period = 0, phase = 0, width = 1;
  int64_t count_in(int64_t a, int64_t b) const;  // keys of the run inside [a, b)
};

// One head of one layer at one length: the pattern with everything resolved.
class PatternRows {
 public:
  // causal: the attention is causal (decoder self-attention); strided/fixed then intersect
  // with j <= i. local1d and local2d are masked by definition, local1d_unmasked never is.
  PatternRows(const SparseConfig& s, int64_t length, int64_t layer, int64_t head, bool causal);
  int64_t length() const { return L_; }
  // Which factor this head uses: 0 = A(1), 1 = A(2), 2 = the union (strided / fixed only).
  int factor() const { return factor_; }
  int64_t stride() const { return l_; }          // strided l after "auto"
  int64_t summary_offset() const { return off_; }  // fixed: this head's shift of the summary
  void row(int64_t i, std::vector<KeyRun>& runs) const;  // disjoint runs of query i
  // Everything the rows depend on, as text (a CsrPattern's recipe): equal recipes, equal rows.
  std::string recipe() const;

 private:
  const SparseConfig& s_;
  int64_t L_, l_ = 0, off_ = 0;
  int factor_ = 2;
  bool causal_;
};

// Compressed sparse rows: row i's keys are indices[indptr[i] .. indptr[i+1]), ascending.
struct CsrPattern {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr;   // [rows + 1]
  std::vector<int32_t> indices;  // [nnz]
  // What the pattern was generated from, when its generator vouches for it (layer_patterns: the
  // sparse config, length, factor, summary shift and mask): equal non-empty recipes mean equal
  // patterns, so sharing and cached plans need not compare nonzeros. Empty: unknown. Code that
  // edits indptr or indices of a pattern with a recipe must clear it.
  std::string recipe;
  int64_t nnz() const { return indptr.empty() ? 0 : indptr.back(); }
  bool contains(int64_t i, int64_t j) const;  // binary search in row i
};

CsrPattern build_csr(const PatternRows& p);
CsrPattern csr_union(const std::vector<CsrPattern>& patterns);  // same shape, merged rows
// For each pattern, the index of the first one equal to it (itself when none before is): the
// heads of one factor get equal copies from layer_patterns, and work per distinct pattern is
// done once (the union, the kernels' row plans). Two patterns with recipes are equal when their
// recipes are (nonzeros not compared; different recipes count as different); otherwise their
// nonzeros are compared.
std::vector<size_t> first_equal_patterns(const std::vector<CsrPattern>& patterns);

struct PatternStats {
  int64_t length = 0, nnz = 0, min_row = 0, max_row = 0;
  double density = 0;     // nnz / L^2
  double csr_bytes = 0;   // int64 indptr + int32 indices
};
PatternStats pattern_stats(const PatternRows& p);  // exact, O(L * runs)

// A window of the L x L pattern downsampled by `zoom`: pixel (y, x) covers rows
// [(r0 + y) z, (r0 + y + 1) z) and columns [(c0 + x) z, (c0 + x + 1) z) and holds the fraction
// of those cells (inside the matrix) that are allowed. Pixels outside the matrix are 0.
// Counting is exact per row; when a pixel spans more than max_rows_per_pixel rows, that many
// evenly spaced rows are averaged (exact when zoom <= max_rows_per_pixel).
struct TileRequest {
  int64_t r0 = 0, c0 = 0, rows = 0, cols = 0, zoom = 1;
  int64_t max_rows_per_pixel = 16;
};
Tensor pattern_tile(const PatternRows& p, const TileRequest& t);  // [rows, cols]

// Largest tile side accepted, to keep a request from allocating gigabytes.
constexpr int64_t kMaxTileSide = 8192;

}  // namespace atlas
