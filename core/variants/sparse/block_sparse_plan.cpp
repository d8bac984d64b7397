// Plans of block_sparse_attention (block_sparse_plan.h): grouping rows so that each group's
// rows see mostly the same keys, estimated in the cells the tile kernel computes.
#include "core/variants/sparse/block_sparse_plan.h"

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <unordered_map>

#include "core/tensor/error.h"
#include "core/variants/sparse/sparse_tile_kernel.h"

namespace atlas {
namespace block_sparse {

namespace {

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
      const KeyRange& run = pr.runs[size_t(k)];
      ++cover[size_t(run.key - lo)];
      --cover[size_t(run.key - lo + run.length)];
      nnz += run.length;
    }
  // Branch-free: every key is written, the count only advances past covered ones.
  keys.resize(size_t(hi - lo));
  int32_t* out = keys.data();
  const int32_t* counts = cover.data();
  int64_t n_keys = 0;
  for (int64_t j = 0, covered = 0; j < hi - lo; ++j) {
    covered += counts[j];
    out[n_keys] = int32_t(lo + j);
    n_keys += covered > 0;
  }
  keys.resize(size_t(n_keys));
  if (position)
    for (int64_t c = 0; c < n_keys; ++c) (*position)[size_t(out[c])] = int32_t(c);
  return nnz;
}

// Estimated cost in score cells (a cell is 2 (d_k + d_v) flops): the cells the tile kernel
// computes; packing a key's and value's rows costs about 8 cells; a group about 64 (its
// bookkeeping).
double work(const RowGrouping& g) {
  return double(g.tile_cells) + 8.0 * double(g.union_keys) + 64.0 * double(g.starts.size());
}

// The score cells the tile kernel computes for rows[0..n) of a group whose union has the columns
// `position` gives: per tile of 16 rows, 16 x 16 per block of 16 columns any of its rows sees.
int64_t tile_cells(const PatternRuns& pr, const int64_t* rows, int64_t n, const std::vector<int32_t>& position,
                   std::vector<int64_t>& block_stamp, int64_t& stamp) {
  using tile_kernel::kLanes;
  int64_t cells = 0;
  for (int64_t t0 = 0; t0 < n; t0 += kLanes) {
    ++stamp;
    for (int64_t r = t0; r < std::min(n, t0 + kLanes); ++r)
      for (int64_t k = pr.row_begin[size_t(rows[r])]; k < pr.row_begin[size_t(rows[r]) + 1]; ++k) {
        const KeyRange& run = pr.runs[size_t(k)];
        const int64_t first = position[size_t(run.key)] / kLanes;
        const int64_t last = position[size_t(run.key + run.length - 1)] / kLanes;
        for (int64_t blk = first; blk <= last; ++blk)
          if (block_stamp[size_t(blk)] != stamp) {
            block_stamp[size_t(blk)] = stamp;
            cells += kLanes * kLanes;
          }
      }
  }
  return cells;
}

// Groups: each run of equal `label` in `order` (rows already sorted by label), cut into pieces of
// at most `rows_per_group`; then the work the grouping implies. Gives up (returns false) as soon
// as that work exceeds `budget`.
bool make_grouping(const PatternRuns& pr, int64_t cols, std::vector<int64_t> order, const std::vector<int64_t>& label,
                   int64_t rows_per_group, int64_t period, double budget, RowGrouping& g) {
  g = RowGrouping{};
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
  std::vector<int32_t> cover, keys, position(static_cast<size_t>(cols));
  std::vector<int64_t> block_stamp(size_t(cols / tile_kernel::kLanes + 1), 0);
  int64_t stamp = 0;
  g.key_begin.push_back(0);
  for (size_t k = 0; k + 1 < g.starts.size(); ++k) {
    const int64_t* rows = g.order.data() + g.starts[k];
    const int64_t count = g.starts[k + 1] - g.starts[k];
    g.nnz.push_back(key_union(pr, rows, count, cover, keys, &position));
    g.keys.insert(g.keys.end(), keys.begin(), keys.end());
    g.key_begin.push_back(int64_t(g.keys.size()));
    g.tile_cells += tile_cells(pr, rows, count, position, block_stamp, stamp);
    g.union_keys += int64_t(keys.size());
    if (work(g) > budget) return false;
  }
  return true;
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

ColumnMasks column_masks(const PatternRuns& runs, const RowGrouping& g, int64_t cols) {
  using tile_kernel::kLanes;
  ColumnMasks m;
  std::vector<int32_t> position(static_cast<size_t>(cols));
  for (size_t k = 0; k + 1 < g.starts.size(); ++k) {
    const int64_t n = g.starts[k + 1] - g.starts[k], u = g.key_begin[k + 1] - g.key_begin[k];
    if (double(g.nnz[k]) < kMinTileDensity * double(n * u)) {
      m.begin.push_back(-1);
      continue;
    }
    const int32_t* keys = g.keys.data() + g.key_begin[k];
    for (int64_t c = 0; c < u; ++c) position[size_t(keys[c])] = int32_t(c);
    const int64_t columns = (u + kLanes - 1) / kLanes * kLanes;
    m.begin.push_back(int64_t(m.bits.size()));
    m.bits.resize(m.bits.size() + size_t((n + kLanes - 1) / kLanes * columns), 0);
    uint16_t* bits = m.bits.data() + m.begin.back();
    for (int64_t r = 0; r < n; ++r) {
      const int64_t i = g.order[size_t(g.starts[k] + r)];
      uint16_t* tile = bits + r / kLanes * columns;
      const uint16_t bit = uint16_t(1u << (r % kLanes));
      for (int64_t e = runs.row_begin[size_t(i)]; e < runs.row_begin[size_t(i) + 1]; ++e) {
        const KeyRange& run = runs.runs[size_t(e)];
        uint16_t* column = tile + position[size_t(run.key)];
        for (int32_t t = 0; t < run.length; ++t) column[t] |= bit;
      }
    }
  }
  return m;
}

}  // namespace

PatternRuns key_runs(const CsrPattern& p) {
  const auto run_starts = [&](int64_t i, auto&& each) {
    const int64_t e = p.indptr[size_t(i) + 1];
    for (int64_t m = p.indptr[size_t(i)]; m < e;) {
      int64_t end = m + 1;
      while (end < e && p.indices[size_t(end)] == p.indices[size_t(end) - 1] + 1) ++end;
      each(m, end);
      m = end;
    }
  };
  int64_t count = 0;  // counted first: strided's column factor has a run per nonzero
  for (int64_t i = 0; i < p.rows; ++i) run_starts(i, [&](int64_t, int64_t) { ++count; });
  PatternRuns r;
  r.runs.reserve(size_t(count));
  r.row_begin.reserve(size_t(p.rows) + 1);
  r.row_begin.push_back(0);
  for (int64_t i = 0; i < p.rows; ++i) {
    run_starts(i, [&](int64_t m, int64_t end) { r.runs.push_back({p.indices[size_t(m)], int32_t(end - m)}); });
    r.row_begin.push_back(int64_t(r.runs.size()));
  }
  return r;
}

// Candidates, cheapest first where the pattern has a period (strided's column factor, whose
// consecutive groups see nearly every key and are given up on early): the rows of each residue,
// then consecutive rows in groups of 128 and of 64.
RowGrouping choose_grouping(const CsrPattern& p, const PatternRuns& pr) {
  std::vector<int64_t> consecutive(size_t(p.rows));
  for (int64_t i = 0; i < p.rows; ++i) consecutive[size_t(i)] = i;
  RowGrouping best, candidate;
  double best_work = INFINITY;
  const auto consider = [&](std::vector<int64_t> order, const std::vector<int64_t>& label, int64_t rows_per_group,
                            int64_t period) {
    if (make_grouping(pr, p.cols, std::move(order), label, rows_per_group, period, best_work, candidate) &&
        work(candidate) < best_work) {
      best_work = work(candidate);
      std::swap(best, candidate);
    }
  };
  const int64_t period = common_gap(p);
  if (period > 1 && period < p.rows) {
    std::vector<int64_t> residue(size_t(p.rows)), order = consecutive;
    for (int64_t i = 0; i < p.rows; ++i) residue[size_t(i)] = i % period;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return residue[size_t(a)] < residue[size_t(b)]; });
    consider(std::move(order), residue, kMaxRowsPerGroup, period);
  }
  std::vector<int64_t> block(size_t(p.rows));
  for (int64_t rows_per_group : {kMaxRowsPerGroup, int64_t(64)}) {
    for (int64_t i = 0; i < p.rows; ++i) block[size_t(i)] = i / rows_per_group;
    consider(consecutive, block, rows_per_group, 0);
  }
  return best;
}

namespace {

// Plans of patterns with a recipe, most recently used first: at most kPlanCacheEntries within
// kPlanCacheBytes (a model has a few distinct patterns per length; a plan at 16k tokens is
// 10-30 MB).
constexpr size_t kPlanCacheEntries = 16;
constexpr size_t kPlanCacheBytes = size_t(256) << 20;

size_t bytes_of(const HeadPlan& p) {
  return p.runs.runs.size() * sizeof(KeyRange) + p.runs.row_begin.size() * 8 + p.grouping.order.size() * 8 +
         p.grouping.starts.size() * 8 + p.grouping.keys.size() * 4 + p.grouping.key_begin.size() * 8 +
         p.grouping.nnz.size() * 8 + p.masks.bits.size() * 2 + p.masks.begin.size() * 8 + p.indptr.size() * 8;
}

struct PlanCache {
  std::mutex mutex;
  std::list<std::pair<std::string, std::shared_ptr<const HeadPlan>>> recent;
  size_t bytes = 0;
};

PlanCache& plan_cache() {
  static PlanCache cache;
  return cache;
}

std::shared_ptr<const HeadPlan> build_plan(const CsrPattern& pattern) {
  auto plan = std::make_shared<HeadPlan>();
  plan->runs = key_runs(pattern);
  plan->grouping = choose_grouping(pattern, plan->runs);
  plan->masks = column_masks(plan->runs, plan->grouping, pattern.cols);
  plan->indptr = pattern.indptr;
  return plan;
}

}  // namespace

std::shared_ptr<const HeadPlan> head_plan(const CsrPattern& pattern) {
  if (pattern.recipe.empty()) return build_plan(pattern);
  PlanCache& cache = plan_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (auto it = cache.recent.begin(); it != cache.recent.end(); ++it)
      if (it->first == pattern.recipe && it->second->indptr == pattern.indptr) {
        cache.recent.splice(cache.recent.begin(), cache.recent, it);
        return it->second;
      }
  }
  std::shared_ptr<const HeadPlan> plan = build_plan(pattern);
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.recent.emplace_front(pattern.recipe, plan);
  cache.bytes += bytes_of(*plan);
  while ((cache.bytes > kPlanCacheBytes || cache.recent.size() > kPlanCacheEntries) && cache.recent.size() > 1) {
    cache.bytes -= bytes_of(*cache.recent.back().second);
    cache.recent.pop_back();
  }
  return plan;
}

}  // namespace block_sparse

using block_sparse::key_runs;
using block_sparse::choose_grouping;
using block_sparse::key_union;

RowGrouping group_rows(const CsrPattern& p) { return choose_grouping(p, key_runs(p)); }

SparseTiles sparse_tiles(const CsrPattern& p, int64_t max_rows) {
  if (max_rows < 1) throw AtlasError("sparse_tiles: max_rows must be at least 1");
  // The CPU kernel's plan (cached by recipe): a group that fits one tile keeps its union; a
  // larger one is cut, each piece with the union of its own rows.
  const std::shared_ptr<const block_sparse::HeadPlan> plan = block_sparse::head_plan(p);
  const RowGrouping& g = plan->grouping;
  SparseTiles t;
  t.row_begin.push_back(0);
  t.key_begin.push_back(0);
  std::vector<int32_t> cover, keys;
  for (size_t k = 0; k + 1 < g.starts.size(); ++k)
    for (int64_t first = g.starts[k]; first < g.starts[k + 1]; first += max_rows) {
      const int64_t n = std::min(max_rows, g.starts[k + 1] - first);
      const int64_t* rows = g.order.data() + first;
      if (n == g.starts[k + 1] - g.starts[k])
        keys.assign(g.keys.begin() + g.key_begin[k], g.keys.begin() + g.key_begin[k + 1]);
      else
        key_union(plan->runs, rows, n, cover, keys, nullptr);
      t.rows.insert(t.rows.end(), rows, rows + n);
      t.row_begin.push_back(int64_t(t.rows.size()));
      t.keys.insert(t.keys.end(), keys.begin(), keys.end());
      t.key_begin.push_back(int64_t(t.keys.size()));
    }
  return t;
}

}  // namespace atlas
