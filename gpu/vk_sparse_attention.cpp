// Sparse CSR attention on the device: the heads' patterns are uploaded as 32-bit CSR (indptr
// relative to each head's first nonzero). Heads of up to 128 dimensions run in tiles
// (shaders/sparse_tiles.comp: the host's plan of row groups and their key unions, one workgroup
// per tile); wider heads run one workgroup per (row, head) over the row's nonzeros
// (shaders/sparse_attention.comp). Patterns or tensors beyond one storage-buffer binding run
// on the host, reported as a fallback.
#include <algorithm>

#include "core/tensor/error.h"
#include "core/variants/sparse/block_sparse_attention.h"
#include "core/variants/sparse/sparse_pattern.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {

constexpr int64_t kTileRows = 64;     // sparse_tiles.comp's workgroup: one row per invocation
constexpr int64_t kMaxTileDims = 128;  // its MAXD

}  // namespace

SparseAttentionResult VulkanBackend::sparse_attention(const DTensor& q, const DTensor& k,
                                                      const DTensor& v, int heads, float scale,
                                                      const std::vector<CsrPattern>& patterns,
                                                      bool want_probs) {
  const GpuBuffer& bq = buf(q, "sparse_attention", "q");
  const GpuBuffer& bk = buf(k, "sparse_attention", "k");
  const GpuBuffer& bv = buf(v, "sparse_attention", "v");
  const int64_t H = heads;
  if (H < 1 || q.shape.size() != 2 || k.shape.size() != 2 || v.shape.size() != 2 ||
      q.shape[1] != k.shape[1] || q.shape[1] % H != 0 || v.shape[1] % H != 0 ||
      v.shape[0] != k.shape[0])
    fail("sparse_attention", "shapes q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " v " +
                                 shape_str(v.shape) + " do not split into " + std::to_string(H) +
                                 " heads");
  if (static_cast<int64_t>(patterns.size()) != H)
    fail("sparse_attention", "need one pattern per head");
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  int64_t total = 0;
  for (const CsrPattern& p : patterns) {
    if (p.rows != lq || p.cols != lk || static_cast<int64_t>(p.indptr.size()) != lq + 1)
      fail("sparse_attention", "pattern is " + std::to_string(p.rows) + "x" +
                                   std::to_string(p.cols) + ", attention is " + std::to_string(lq) +
                                   "x" + std::to_string(lk));
    total += p.nnz();
  }

  const bool fits_device = lq <= kMaxWorkgroups && H <= kMaxWorkgroups && total < (int64_t{1} << 31) &&
                           fits(static_cast<uint64_t>(std::max<int64_t>(total, 1))) &&
                           fits(static_cast<uint64_t>(H * (lq + 1))) &&
                           fits(static_cast<uint64_t>(q.numel())) &&
                           fits(static_cast<uint64_t>(k.numel())) &&
                           fits(static_cast<uint64_t>(v.numel())) &&
                           fits(static_cast<uint64_t>(lq * H * dv));
  if (!fits_device) {
    note_fallback("sparse_attention: " + std::to_string(total) + " nonzeros over " +
                  std::to_string(H) + " heads of " + std::to_string(lq) + " x " +
                  std::to_string(lk) + " exceed the kernel's limits (one storage-buffer "
                  "binding per array, Lq <= 65535); ran on the host");
    return Backend::sparse_attention(q, k, v, heads, scale, patterns, want_probs);
  }

  SparseAttentionResult r;
  r.out = make({lq, H * dv});
  DTensor probs = make({total});  // the kernel's scratch for scores, so it always exists
  if (want_probs) r.probs = probs;
  if (lq == 0) return r;

  std::vector<uint32_t> indptr(static_cast<size_t>(H * (lq + 1))), base(static_cast<size_t>(H));
  std::vector<uint32_t> indices;
  indices.reserve(static_cast<size_t>(std::max<int64_t>(total, 1)));
  for (int64_t h = 0; h < H; ++h) {
    const CsrPattern& p = patterns[static_cast<size_t>(h)];
    base[static_cast<size_t>(h)] = static_cast<uint32_t>(indices.size());
    for (int64_t i = 0; i <= lq; ++i)
      indptr[static_cast<size_t>(h * (lq + 1) + i)] = static_cast<uint32_t>(p.indptr[static_cast<size_t>(i)]);
    for (int32_t j : p.indices) {
      if (j < 0 || j >= lk)
        fail("sparse_attention",
             "pattern index " + std::to_string(j) + " outside 0.." + std::to_string(lk - 1));
      indices.push_back(static_cast<uint32_t>(j));
    }
  }
  if (indices.empty()) indices.push_back(0);  // a binding needs at least one element
  auto b_indptr = upload_bytes(indptr.data(), indptr.size() * 4);
  auto b_indices = upload_bytes(indices.data(), indices.size() * 4);
  auto b_base = upload_bytes(base.data(), base.size() * 4);

  const GpuBuffer& bo = buf(r.out, "sparse_attention", "output");
  const GpuBuffer& bp = buf(probs, "sparse_attention", "probs");
  auto shapes = [&](auto& pc) {  // the fields both kernels' push constants start with
    pc.lq = static_cast<uint32_t>(lq);
    pc.lk = static_cast<uint32_t>(lk);
    pc.heads = static_cast<uint32_t>(H);
    pc.dh = static_cast<uint32_t>(dh);
    pc.dv = static_cast<uint32_t>(dv);
    pc.scale = scale;
  };
  if (dh <= kMaxTileDims && dv <= kMaxTileDims) {
    // The tiles of every head as 5 words per tile: head, rows [first, end) in `rows`, keys
    // [first, end) in `keys`. Heads with equal patterns share one plan and its row and key lists.
    std::vector<uint32_t> tiles, rows, keys;
    const std::vector<size_t> first = first_equal_patterns(patterns);
    std::vector<SparseTiles> plans(patterns.size());           // for the first head of each pattern
    std::vector<uint32_t> rows_at(patterns.size()), keys_at(patterns.size());  // its lists' offsets
    for (int64_t h = 0; h < H; ++h) {
      const size_t f = first[static_cast<size_t>(h)];
      SparseTiles& plan = plans[f];
      if (f == static_cast<size_t>(h)) {
        plan = sparse_tiles(patterns[f], kTileRows);
        rows_at[f] = static_cast<uint32_t>(rows.size());
        keys_at[f] = static_cast<uint32_t>(keys.size());
        for (int64_t r : plan.rows) rows.push_back(static_cast<uint32_t>(r));
        for (int32_t j : plan.keys) keys.push_back(static_cast<uint32_t>(j));
      }
      for (int64_t t = 0; t < plan.count(); ++t) {
        tiles.push_back(static_cast<uint32_t>(h));
        tiles.push_back(rows_at[f] + static_cast<uint32_t>(plan.row_begin[size_t(t)]));
        tiles.push_back(rows_at[f] + static_cast<uint32_t>(plan.row_begin[size_t(t) + 1]));
        tiles.push_back(keys_at[f] + static_cast<uint32_t>(plan.key_begin[size_t(t)]));
        tiles.push_back(keys_at[f] + static_cast<uint32_t>(plan.key_begin[size_t(t) + 1]));
      }
    }
    const uint64_t tile_count = tiles.size() / 5;
    if (tile_count < uint64_t(kMaxWorkgroups) * kMaxWorkgroups && fits(std::max<size_t>(tiles.size(), 1)) &&
        fits(std::max<size_t>(rows.size(), 1)) && fits(std::max<size_t>(keys.size(), 1))) {
      // Every row is in one tile; a row without keys gets a zero output there.
      for (auto* list : {&tiles, &rows, &keys})
        if (list->empty()) list->push_back(0);  // a binding needs at least one element
      auto b_tiles = upload_bytes(tiles.data(), tiles.size() * 4);
      auto b_rows = upload_bytes(rows.data(), rows.size() * 4);
      auto b_keys = upload_bytes(keys.data(), keys.size() * 4);
      rec_->access({&bq, &bk, &bv, b_indptr.get(), b_indices.get(), b_base.get(), b_tiles.get(), b_rows.get(),
                    b_keys.get()},
                   {&bo, &bp});
      SparseTilesPC pc{};
      shapes(pc);
      pc.tile_count = static_cast<uint32_t>(tile_count);
      pc.want_probs = want_probs ? 1u : 0u;
      if (tile_count > 0)
        rec_->dispatch(pipes_->get(ShaderId::SparseTiles),
                       {whole(bq, q.numel()), whole(bk, k.numel()), whole(bv, v.numel()),
                        whole(*b_indptr, indptr.size()), whole(*b_indices, indices.size()),
                        whole(*b_base, base.size()), whole(*b_tiles, tiles.size()), whole(*b_rows, rows.size()),
                        whole(*b_keys, keys.size()), whole(bo, lq * H * dv), whole(bp, total)},
                       pc, static_cast<uint32_t>(std::min<uint64_t>(tile_count, kMaxWorkgroups)),
                       static_cast<uint32_t>((tile_count + kMaxWorkgroups - 1) / kMaxWorkgroups));
      return r;
    }
  }
  rec_->access({&bq, &bk, &bv, b_indptr.get(), b_indices.get(), b_base.get(), &bp}, {&bo, &bp});
  SparseAttentionPC pc{};
  shapes(pc);
  rec_->dispatch(pipes_->get(ShaderId::SparseAttention),
                 {whole(bq, q.numel()), whole(bk, k.numel()), whole(bv, v.numel()),
                  whole(*b_indptr, indptr.size()), whole(*b_indices, indices.size()),
                  whole(*b_base, base.size()), whole(bo, lq * H * dv), whole(bp, total)},
                 pc, static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return r;
}

}  // namespace atlas::vk
