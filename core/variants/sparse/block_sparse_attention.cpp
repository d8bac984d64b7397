// Sparse attention in dense tiles (block_sparse_attention.h). Per head and row group G with key
// union U (ascending), all on the host:
//   S = Q_G K_U^T (GEMM), P[r, u] = softmax over row r's own keys of scale S[r, u], else 0,
//   O_G = P V_U (GEMM)
// which is sparse_attention's sum over nonzeros with the zero terms added.
#include "core/variants/sparse/block_sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/backend/backend.h"
#include "core/tensor/error.h"
#include "core/variants/sparse/sparse_attention.h"

namespace atlas {

namespace {

// A run of consecutive keys [key, key + length) of one row, starting at nonzero `at`.
struct KeyRun {
  int64_t at;
  int32_t key, length;
};

// A pattern's rows as runs of consecutive keys: row i's are runs[row_begin[i] .. row_begin[i+1]).
// Block-local and summary patterns have a few long runs per row, so grouping and tiling work
// over runs rather than nonzeros.
struct PatternRuns {
  std::vector<KeyRun> runs;
  std::vector<int64_t> row_begin;
};

PatternRuns key_runs(const CsrPattern& p) {
  PatternRuns r;
  r.row_begin.reserve(size_t(p.rows) + 1);
  r.row_begin.push_back(0);
  for (int64_t i = 0; i < p.rows; ++i) {
    const int64_t e = p.indptr[size_t(i) + 1];
    for (int64_t m = p.indptr[size_t(i)]; m < e;) {
      int64_t end = m + 1;
      while (end < e && p.indices[size_t(end)] == p.indices[size_t(end) - 1] + 1) ++end;
      r.runs.push_back({m, p.indices[size_t(m)], int32_t(end - m)});
      m = end;
    }
    r.row_begin.push_back(int64_t(r.runs.size()));
  }
  return r;
}

// The union U of the keys of rows[0..n), ascending, from their runs: coverage is counted by
// differences over the rows' key range. Returns nnz of the rows; `position` maps a key of U to
// its column.
int64_t key_union(const PatternRuns& pr, const int64_t* rows, int64_t n, std::vector<int32_t>& cover,
                  std::vector<int32_t>& keys, std::vector<int32_t>* position) {
  int64_t lo = INT64_MAX, hi = 0, nnz = 0;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t b = pr.row_begin[size_t(rows[r])], e = pr.row_begin[size_t(rows[r]) + 1];
    if (b == e) continue;
    lo = std::min<int64_t>(lo, pr.runs[size_t(b)].key);
    hi = std::max<int64_t>(hi, pr.runs[size_t(e) - 1].key + pr.runs[size_t(e) - 1].length);
  }
  keys.clear();
  if (hi == 0) return 0;
  cover.assign(size_t(hi - lo) + 1, 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k = pr.row_begin[size_t(rows[r])]; k < pr.row_begin[size_t(rows[r]) + 1]; ++k) {
      const KeyRun& run = pr.runs[size_t(k)];
      ++cover[size_t(run.key - lo)];
      --cover[size_t(run.key - lo + run.length)];
      nnz += run.length;
    }
  for (int64_t j = lo, covered = 0; j < hi; ++j)
    if ((covered += cover[size_t(j - lo)]) > 0) {
      if (position) (*position)[size_t(j)] = int32_t(keys.size());
      keys.push_back(int32_t(j));
    }
  return nnz;
}

// Groups: each run of equal `label` in `order` (rows already sorted by label), cut into pieces of
// at most `rows_per_group`; then the work the grouping implies.
RowGrouping make_grouping(const PatternRuns& pr, std::vector<int64_t> order, const std::vector<int64_t>& label,
                          int64_t rows_per_group, int64_t period) {
  RowGrouping g;
  g.order = std::move(order);
  g.period = period;
  const size_t n = g.order.size();
  for (size_t a = 0; a < n;) {
    size_t b = a + 1;
    while (b < n && label[size_t(g.order[b])] == label[size_t(g.order[a])]) ++b;
    for (size_t s = a; s < b; s += size_t(rows_per_group)) g.starts.push_back(int64_t(s));
    a = b;
  }
  g.starts.push_back(int64_t(n));
  std::vector<int32_t> cover, keys;
  for (size_t k = 0; k + 1 < g.starts.size(); ++k) {
    const int64_t rows = g.starts[k + 1] - g.starts[k];
    key_union(pr, g.order.data() + g.starts[k], rows, cover, keys, nullptr);
    g.tile_cells += rows * int64_t(keys.size());
    g.union_keys += int64_t(keys.size());
  }
  return g;
}

// Estimated cost in score cells: a cell is 2 (d_k + d_v) flops in the two GEMMs; gathering a
// key's and value's rows costs about 8 cells; a group about 64 (its bookkeeping and GEMM calls).
double work(const RowGrouping& g) {
  return double(g.tile_cells) + 8.0 * double(g.union_keys) + 64.0 * double(g.starts.size());
}

// The most frequent gap > 1 between neighbouring keys of a row, over up to 64 sampled rows:
// strided's column factor {i, i - l, i - 2l, ...} gives l; block-local patterns give none (0).
int64_t common_gap(const CsrPattern& p) {
  std::unordered_map<int64_t, int64_t> counts;
  const int64_t step = std::max<int64_t>(1, p.rows / 64);
  for (int64_t i = 0; i < p.rows; i += step)
    for (int64_t n = p.indptr[size_t(i)] + 1; n < p.indptr[size_t(i) + 1]; ++n) {
      const int64_t gap = int64_t(p.indices[size_t(n)]) - p.indices[size_t(n) - 1];
      if (gap > 1) ++counts[gap];
    }
  int64_t best = 0, best_count = 0;
  for (const auto& [gap, count] : counts)
    if (count > best_count || (count == best_count && gap < best)) best = gap, best_count = count;
  return best;
}

RowGrouping choose_grouping(const CsrPattern& p, const PatternRuns& pr) {
  std::vector<int64_t> consecutive(size_t(p.rows)), block(size_t(p.rows));
  for (int64_t i = 0; i < p.rows; ++i) consecutive[size_t(i)] = i;
  RowGrouping best;
  bool have = false;
  for (int64_t rows_per_group : {int64_t(64), kMaxRowsPerGroup}) {
    for (int64_t i = 0; i < p.rows; ++i) block[size_t(i)] = i / rows_per_group;
    RowGrouping g = make_grouping(pr, consecutive, block, rows_per_group, 0);
    if (!have || work(g) < work(best)) best = std::move(g), have = true;
  }
  const int64_t period = common_gap(p);
  if (period > 1 && period < p.rows) {
    std::vector<int64_t> residue(size_t(p.rows)), order = consecutive;
    for (int64_t i = 0; i < p.rows; ++i) residue[size_t(i)] = i % period;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return residue[size_t(a)] < residue[size_t(b)]; });
    RowGrouping g = make_grouping(pr, std::move(order), residue, kMaxRowsPerGroup, period);
    if (work(g) < work(best)) best = std::move(g);
  }
  return best;
}

using AlignedFloats = std::vector<float, Eigen::aligned_allocator<float>>;

float* grow(AlignedFloats& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
  return v.data();
}

// The probabilities' rows start on 64-byte boundaries: Eigen's vectorised exp and sum then split
// every row the same way into vector and scalar parts, so results do not depend on where the
// buffer happened to be allocated (runs are reproducible bit for bit).
constexpr int64_t kRowAlign = 16;  // floats
using StridedMap = Eigen::Map<Mat, Eigen::Unaligned, Eigen::OuterStride<>>;

struct Problem {
  const float *Q, *K, *V;
  int64_t H, dk, dv;
  float scale;
  float* out;
};

// Per-thread buffers, grown as needed.
struct Scratch {
  std::vector<int32_t> cover, keys, position;  // key_union's
  std::vector<float> row;
  AlignedFloats qg, kg, vg, s, p, o;
};

// The group's probabilities from its scores s [n, |U|]: row r's runs of keys are runs of
// columns of U (both ascending), so their scaled scores are copied into a row of -inf and the
// softmax is taken over the whole row with vector operations (exp(-inf) = 0 off the pattern).
void softmax_rows(const Problem& pr, const PatternRuns& runs, const int64_t* rows, int64_t n, float* P,
                  const std::vector<int32_t>& position, const MatMap& s, StridedMap& pm) {
  for (int64_t r = 0; r < n; ++r) {
    auto row = pm.row(r);
    const int64_t first = runs.row_begin[size_t(rows[r])], last = runs.row_begin[size_t(rows[r]) + 1];
    if (first == last) {  // no key: zero probabilities, zero output
      row.setZero();
      continue;
    }
    row.setConstant(-INFINITY);
    for (int64_t k = first; k < last; ++k) {
      const KeyRun& run = runs.runs[size_t(k)];
      const int32_t c = position[size_t(run.key)];
      row.segment(c, run.length) = s.row(r).segment(c, run.length) * pr.scale;
    }
    const float mx = row.maxCoeff();
    row = (row.array() - mx).exp().matrix();
    row *= 1.0f / row.sum();
    if (P)
      for (int64_t k = first; k < last; ++k) {
        const KeyRun& run = runs.runs[size_t(k)];
        const int32_t c = position[size_t(run.key)];
        for (int32_t t = 0; t < run.length; ++t) P[run.at + t] = row(c + t);
      }
  }
}

// Rows rows[0..n) of head h as one tile.
void attend_group(const Problem& pr, const CsrPattern& p, const PatternRuns& runs, int64_t h, const int64_t* rows,
                  int64_t n, float* P, Scratch& sc) {
  if (sc.position.size() < size_t(p.cols)) sc.position.resize(size_t(p.cols));
  const int64_t nnz = key_union(runs, rows, n, sc.cover, sc.keys, &sc.position);
  const int64_t u = int64_t(sc.keys.size());
  if (nnz == 0) return;
  if (double(nnz) < kMinTileDensity * double(n * u)) {
    for (int64_t r = 0; r < n; ++r)
      sparse_attention_row(pr.Q, pr.K, pr.V, pr.H, pr.dk, pr.dv, pr.scale, p, h, rows[r],
                           pr.out + (rows[r] * pr.H + h) * pr.dv, P, sc.row);
    return;
  }
  MatMap qg(grow(sc.qg, n * pr.dk), n, pr.dk), s(grow(sc.s, n * u), n, u), o(grow(sc.o, n * pr.dv), n, pr.dv);
  const int64_t ld = (u + kRowAlign - 1) / kRowAlign * kRowAlign;
  StridedMap pm(grow(sc.p, n * ld), n, u, Eigen::OuterStride<>(ld));
  for (int64_t r = 0; r < n; ++r) std::copy_n(pr.Q + (rows[r] * pr.H + h) * pr.dk, pr.dk, &qg(r, 0));
  const int64_t lo = sc.keys.front();
  if (sc.keys.back() - lo + 1 == u) {  // U is one range of keys: read in place
    const StridedMap kh(const_cast<float*>(pr.K) + (lo * pr.H + h) * pr.dk, u, pr.dk, Eigen::OuterStride<>(pr.H * pr.dk));
    const StridedMap vh(const_cast<float*>(pr.V) + (lo * pr.H + h) * pr.dv, u, pr.dv, Eigen::OuterStride<>(pr.H * pr.dv));
    s.noalias() = qg * kh.transpose();
    softmax_rows(pr, runs, rows, n, P, sc.position, s, pm);
    o.noalias() = pm * vh;
  } else {  // gathered
    MatMap kg(grow(sc.kg, u * pr.dk), u, pr.dk), vg(grow(sc.vg, u * pr.dv), u, pr.dv);
    for (int64_t c = 0; c < u; ++c) {
      const int64_t j = sc.keys[size_t(c)];
      std::copy_n(pr.K + (j * pr.H + h) * pr.dk, pr.dk, &kg(c, 0));
      std::copy_n(pr.V + (j * pr.H + h) * pr.dv, pr.dv, &vg(c, 0));
    }
    s.noalias() = qg * kg.transpose();
    softmax_rows(pr, runs, rows, n, P, sc.position, s, pm);
    o.noalias() = pm * vg;
  }
  for (int64_t r = 0; r < n; ++r) std::copy_n(&o(r, 0), pr.dv, pr.out + (rows[r] * pr.H + h) * pr.dv);
}

// One head's plan: its runs and row groups (shared by heads with the same pattern).
struct HeadPlan {
  PatternRuns runs;
  RowGrouping grouping;
};

}  // namespace

RowGrouping group_rows(const CsrPattern& p) { return choose_grouping(p, key_runs(p)); }

SparseTiles sparse_tiles(const CsrPattern& p, int64_t max_rows) {
  if (max_rows < 1) throw AtlasError("sparse_tiles: max_rows must be at least 1");
  const PatternRuns runs = key_runs(p);
  const RowGrouping g = choose_grouping(p, runs);
  SparseTiles t;
  t.row_begin.push_back(0);
  t.key_begin.push_back(0);
  std::vector<int32_t> cover, keys;
  for (size_t k = 0; k + 1 < g.starts.size(); ++k)
    for (int64_t first = g.starts[k]; first < g.starts[k + 1]; first += max_rows) {
      const int64_t n = std::min(max_rows, g.starts[k + 1] - first);
      const int64_t* rows = g.order.data() + first;
      key_union(runs, rows, n, cover, keys, nullptr);
      t.rows.insert(t.rows.end(), rows, rows + n);
      t.row_begin.push_back(int64_t(t.rows.size()));
      t.keys.insert(t.keys.end(), keys.begin(), keys.end());
      t.key_begin.push_back(int64_t(t.keys.size()));
    }
  return t;
}

Tensor block_sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v, int heads, float scale,
                              const std::vector<CsrPattern>& patterns,
                              std::vector<std::vector<float>>* probs) {
  check_sparse_attention_shapes(q, k, v, heads, patterns);
  const int64_t H = heads, L = q.shape[0];
  Tensor out({L, H * (v.shape[1] / H)});
  const Problem pr{q.data.data(), k.data.data(), v.data.data(), H, q.shape[1] / H, v.shape[1] / H, scale,
                   out.data.data()};
  if (probs) {
    probs->assign(size_t(H), {});
    for (int64_t h = 0; h < H; ++h) (*probs)[size_t(h)].resize(size_t(patterns[size_t(h)].nnz()));
  }
  // Heads with the same pattern (layer_patterns gives the heads of one factor equal copies) share
  // a plan; the tasks are (head, group) pairs.
  const std::vector<size_t> first = first_equal_patterns(patterns);
  std::vector<HeadPlan> plans(patterns.size());  // filled for the first head of each pattern
  std::vector<std::pair<int64_t, int64_t>> tasks;
  for (int64_t h = 0; h < H; ++h) {
    HeadPlan& plan = plans[first[size_t(h)]];
    if (first[size_t(h)] == size_t(h)) {
      plan.runs = key_runs(patterns[size_t(h)]);
      plan.grouping = choose_grouping(patterns[size_t(h)], plan.runs);
    }
    for (size_t g = 0; g + 1 < plan.grouping.starts.size(); ++g) tasks.emplace_back(h, int64_t(g));
  }
#pragma omp parallel num_threads(cpu_threads())
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (size_t t = 0; t < tasks.size(); ++t) {
      const auto [h, g] = tasks[t];
      const HeadPlan& plan = plans[first[size_t(h)]];
      const int64_t first = plan.grouping.starts[size_t(g)], n = plan.grouping.starts[size_t(g) + 1] - first;
      attend_group(pr, patterns[size_t(h)], plan.runs, h, plan.grouping.order.data() + first, n,
                   probs ? (*probs)[size_t(h)].data() : nullptr, scratch);
    }
  }
  return out;
}

}  // namespace atlas
