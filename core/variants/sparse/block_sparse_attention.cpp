// Sparse attention in dense tiles (block_sparse_attention.h). Per head, its plan
// (block_sparse_plan.h) groups the rows; per group with key union U (ascending), all on the host:
// U's keys and values are packed once, then each tile of 16 rows goes through the tile kernel
// (sparse_tile_kernel.h): S = Q_tile K_U^T over the 16-key blocks the tile's rows see, the
// softmax over each row's own keys (exactly 0 elsewhere), O_tile = P V_U. That is
// sparse_attention's sum over nonzeros with zero terms added.
#include "core/variants/sparse/block_sparse_attention.h"

#include <algorithm>
#include <memory>

#include "core/backend/backend.h"
#include "core/tensor/error.h"
#include "core/variants/sparse/block_sparse_plan.h"
#include "core/variants/sparse/sparse_attention.h"
#include "core/variants/sparse/sparse_tile_kernel.h"

namespace atlas {

namespace {

using block_sparse::HeadPlan;
using block_sparse::KeyRange;
using tile_kernel::kLanes;

struct Problem {
  const float *Q, *K, *V;
  int64_t H, dk, dv;
  float scale;
  float* out;
};

// Per-thread buffers, grown as needed.
struct Scratch {
  std::vector<int32_t> position;  // a key's column in the group's union
  std::vector<float> row;
  tile_kernel::PackedKeys packed;
  tile_kernel::TileScratch tile;
};

// Group g of head h's plan: sixteen rows at a time through the tile kernel (or row by row when
// the group is too sparse for tiles). P (optional): the head's probabilities by CSR position.
void attend_group(const Problem& pr, const CsrPattern& p, const HeadPlan& plan, int64_t h, int64_t g, float* P,
                  Scratch& sc) {
  const RowGrouping& grouping = plan.grouping;
  const int64_t* rows = grouping.order.data() + grouping.starts[size_t(g)];
  const int64_t n = grouping.starts[size_t(g) + 1] - grouping.starts[size_t(g)];
  const int32_t* keys = grouping.keys.data() + grouping.key_begin[size_t(g)];
  const int64_t u = grouping.key_begin[size_t(g) + 1] - grouping.key_begin[size_t(g)];
  if (grouping.nnz[size_t(g)] == 0) return;
  if (plan.masks.begin[size_t(g)] < 0) {  // too sparse for tiles
    for (int64_t r = 0; r < n; ++r)
      sparse_attention_row(pr.Q, pr.K, pr.V, pr.H, pr.dk, pr.dv, pr.scale, p, h, rows[r],
                           pr.out + (rows[r] * pr.H + h) * pr.dv, P, sc.row);
    return;
  }
  const uint16_t* masks = plan.masks.bits.data() + plan.masks.begin[size_t(g)];
  // The group's query and output rows, fetched while its keys are packed.
  for (int64_t r = 0; r < n; ++r)
    for (int64_t d = 0; d < std::max(pr.dk, pr.dv); d += kLanes) {
      if (d < pr.dk) __builtin_prefetch(pr.Q + (rows[r] * pr.H + h) * pr.dk + d, 0, 2);
      if (d < pr.dv) __builtin_prefetch(pr.out + (rows[r] * pr.H + h) * pr.dv + d, 1, 2);
    }
  tile_kernel::pack_keys(pr.K + h * pr.dk, pr.H * pr.dk, pr.V + h * pr.dv, pr.H * pr.dv, keys, u, pr.dk, pr.dv,
                         sc.packed);
  if (P) {
    if (sc.position.size() < size_t(p.cols)) sc.position.resize(size_t(p.cols));
    for (int64_t c = 0; c < u; ++c) sc.position[size_t(keys[c])] = int32_t(c);
  }
  const int64_t columns = sc.packed.blocks * kLanes;
  const float* q_rows[kLanes];
  float* out_rows[kLanes];
  for (int64_t t0 = 0; t0 < n; t0 += kLanes) {
    const int m = int(std::min<int64_t>(kLanes, n - t0));
    for (int r = 0; r < m; ++r) {
      q_rows[r] = pr.Q + (rows[t0 + r] * pr.H + h) * pr.dk;
      out_rows[r] = pr.out + (rows[t0 + r] * pr.H + h) * pr.dv;
    }
    tile_kernel::attend_tile(sc.packed, q_rows, m, masks + t0 / kLanes * columns, pr.scale, out_rows, sc.tile);
    if (!P) continue;
    for (int r = 0; r < m; ++r) {
      const int64_t i = rows[t0 + r];
      int64_t at = p.indptr[size_t(i)];  // the CSR position of the run's first key
      for (int64_t k = plan.runs.row_begin[size_t(i)]; k < plan.runs.row_begin[size_t(i) + 1]; ++k) {
        const KeyRange& run = plan.runs.runs[size_t(k)];
        const float* column = sc.tile.p.data() + int64_t(sc.position[size_t(run.key)]) * kLanes + r;
        for (int32_t t = 0; t < run.length; ++t) P[at++] = column[t * kLanes] * sc.tile.inverse_sum[r];
      }
    }
  }
}

}  // namespace

Tensor block_sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v, int heads, float scale,
                              const std::vector<CsrPattern>& patterns,
                              std::vector<std::vector<float>>* probs) {
  check_sparse_attention_shapes(q.shape, k.shape, v.shape, heads, patterns);
  const int64_t H = heads, L = q.shape[0];
  Tensor out({L, H * (v.shape[1] / H)});
  const Problem pr{q.data.data(), k.data.data(), v.data.data(), H, q.shape[1] / H, v.shape[1] / H, scale,
                   out.data.data()};
  if (probs) {
    probs->assign(size_t(H), {});
    for (int64_t h = 0; h < H; ++h) (*probs)[size_t(h)].resize(size_t(patterns[size_t(h)].nnz()));
  }
  // Heads with the same pattern (layer_patterns gives the heads of one factor equal copies) share
  // a plan. The tasks are (head, group) pairs, group by group across the heads of a plan: the
  // heads' queries, keys and values of the same rows sit side by side in memory, so the rows a
  // group reads are fetched once for all of them rather than once per head.
  const std::vector<size_t> first = first_equal_patterns(patterns);
  std::vector<std::shared_ptr<const HeadPlan>> plans(patterns.size());  // for the first head of each pattern
#pragma omp parallel for num_threads(cpu_threads()) schedule(dynamic, 1)
  for (int64_t h = 0; h < H; ++h)
    if (first[size_t(h)] == size_t(h)) plans[size_t(h)] = block_sparse::head_plan(patterns[size_t(h)]);
  std::vector<std::pair<int64_t, int64_t>> tasks;
  for (int64_t lead = 0; lead < H; ++lead) {
    if (first[size_t(lead)] != size_t(lead)) continue;
    for (size_t g = 0; g + 1 < plans[size_t(lead)]->grouping.starts.size(); ++g)
      for (int64_t h = lead; h < H; ++h)
        if (first[size_t(h)] == size_t(lead)) tasks.emplace_back(h, int64_t(g));
  }
#pragma omp parallel num_threads(cpu_threads())
  {
    Scratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (size_t t = 0; t < tasks.size(); ++t) {
      const auto [h, g] = tasks[t];
      attend_group(pr, patterns[size_t(h)], *plans[first[size_t(h)]], h, g,
                   probs ? (*probs)[size_t(h)].data() : nullptr, scratch);
    }
  }
  return out;
}

}  // namespace atlas
