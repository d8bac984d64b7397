// The Vulkan kernels of the sparse_attention op (core/variants/sparse/sparse_attention_op.h):
// the heads' patterns are uploaded as 32-bit CSR (indptr relative to each head's first nonzero).
// Heads of up to 128 dimensions run in tiles (sparse_tiles.comp: the host's plan of row groups
// and their key unions, one workgroup per tile); wider heads run one workgroup per (row, head)
// over the row's nonzeros (sparse_attention.comp). Patterns or tensors beyond one
// storage-buffer binding run the host reference instead, reported as a fallback.
#include <algorithm>

#include "core/tensor/error.h"
#include "core/variants/sparse/block_sparse_attention.h"
#include "core/variants/sparse/sparse_attention_op.h"
#include "gpu/variant_kernel.h"
#include "sparse_attention_spv.h"
#include "sparse_tiles_spv.h"

namespace atlas::vk::variants {

namespace {

constexpr int64_t kTileRows = 64;      // sparse_tiles.comp's workgroup: one row per invocation
constexpr int64_t kMaxTileDims = 128;  // its MAXD

// sparse_attention.comp: one workgroup per (query row, head).
struct SparseAttentionPC {
  uint32_t lq, lk, heads, dh, dv;
  float scale;
};
// sparse_tiles.comp: one workgroup per tile of up to 64 rows (sparse_tiles plan).
struct SparseTilesPC {
  uint32_t lq, lk, heads, dh, dv;
  float scale;
  uint32_t tile_count, want_probs;
};
static_assert(sizeof(SparseAttentionPC) <= 128 && sizeof(SparseTilesPC) <= 128,
              "Vulkan guarantees only 128 bytes of push constants");

const ShaderSpec kSparseRowsShader = ATLAS_SHADER_SPEC(sparse_attention, 8, SparseAttentionPC);
const ShaderSpec kSparseTilesShader = ATLAS_SHADER_SPEC(sparse_tiles, 11, SparseTilesPC);

// Inputs {q, k, v} after sparse_attention's shape and pattern check.
std::vector<DTensor> run_sparse_attention(KernelApi& api, const std::vector<DTensor>& in,
                                          const void* a) {
  const SparseOpArgs& args = *static_cast<const SparseOpArgs*>(a);
  const std::vector<CsrPattern>& patterns = *args.patterns;
  const char* op = "sparse_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const int64_t H = args.heads;
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  const float scale = args.scale;
  const bool want_probs = args.want_probs;
  int64_t total = 0;
  for (const CsrPattern& p : patterns) total += p.nnz();

  const bool fits_device =
      lq <= kMaxWorkgroups && H <= kMaxWorkgroups && total < (int64_t{1} << 31) &&
      api.fits(static_cast<uint64_t>(std::max<int64_t>(total, 1))) &&
      api.fits(static_cast<uint64_t>(H * (lq + 1))) && api.fits(static_cast<uint64_t>(q.numel())) &&
      api.fits(static_cast<uint64_t>(k.numel())) && api.fits(static_cast<uint64_t>(v.numel())) &&
      api.fits(static_cast<uint64_t>(lq * H * dv));
  if (!fits_device)
    return api.on_host(sparse_attention_op(), in, a,
                       "sparse_attention: " + std::to_string(total) + " nonzeros over " +
                           std::to_string(H) + " heads of " + std::to_string(lq) + " x " +
                           std::to_string(lk) +
                           " exceed the kernel's limits (one storage-buffer binding per array, "
                           "Lq <= 65535); ran on the host");

  const DTensor out = api.make({lq, H * dv});
  const DTensor probs = api.make({total});  // the kernel's scratch for scores, so it always exists
  std::vector<DTensor> result = {out};
  if (want_probs) result.push_back(probs);
  if (lq == 0) return result;

  std::vector<uint32_t> indptr(static_cast<size_t>(H * (lq + 1))), base(static_cast<size_t>(H));
  std::vector<uint32_t> indices;
  indices.reserve(static_cast<size_t>(std::max<int64_t>(total, 1)));
  for (int64_t h = 0; h < H; ++h) {
    const CsrPattern& p = patterns[static_cast<size_t>(h)];
    base[static_cast<size_t>(h)] = static_cast<uint32_t>(indices.size());
    for (int64_t i = 0; i <= lq; ++i)
      indptr[static_cast<size_t>(h * (lq + 1) + i)] =
          static_cast<uint32_t>(p.indptr[static_cast<size_t>(i)]);
    for (int32_t j : p.indices) {
      if (j < 0 || j >= lk)
        throw AtlasError("sparse_attention: pattern index " + std::to_string(j) + " outside 0.." +
                         std::to_string(lk - 1));
      indices.push_back(static_cast<uint32_t>(j));
    }
  }
  if (indices.empty()) indices.push_back(0);  // a binding needs at least one element
  auto b_indptr = api.upload_words(indptr);
  auto b_indices = api.upload_words(indices);
  auto b_base = api.upload_words(base);

  const GpuBuffer& bo = api.buffer(out, op, "output");
  const GpuBuffer& bp = api.buffer(probs, op, "probs");
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
    std::vector<SparseTiles> plans(patterns.size());  // for the first head of each pattern
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
    if (tile_count < uint64_t(kMaxWorkgroups) * kMaxWorkgroups &&
        api.fits(std::max<size_t>(tiles.size(), 1)) && api.fits(std::max<size_t>(rows.size(), 1)) &&
        api.fits(std::max<size_t>(keys.size(), 1))) {
      // Every row is in one tile; a row without keys gets a zero output there.
      for (auto* list : {&tiles, &rows, &keys})
        if (list->empty()) list->push_back(0);  // a binding needs at least one element
      auto b_tiles = api.upload_words(tiles);
      auto b_rows = api.upload_words(rows);
      auto b_keys = api.upload_words(keys);
      api.recorder().access({&bq, &bk, &bv, b_indptr.get(), b_indices.get(), b_base.get(),
                             b_tiles.get(), b_rows.get(), b_keys.get()},
                            {&bo, &bp});
      SparseTilesPC pc{};
      shapes(pc);
      pc.tile_count = static_cast<uint32_t>(tile_count);
      pc.want_probs = want_probs ? 1u : 0u;
      if (tile_count > 0)
        api.recorder().dispatch(
            api.pipeline(kSparseTilesShader),
            {api.whole(bq, q.numel()), api.whole(bk, k.numel()), api.whole(bv, v.numel()),
             api.whole(*b_indptr, indptr.size()), api.whole(*b_indices, indices.size()),
             api.whole(*b_base, base.size()), api.whole(*b_tiles, tiles.size()),
             api.whole(*b_rows, rows.size()), api.whole(*b_keys, keys.size()),
             api.whole(bo, lq * H * dv), api.whole(bp, total)},
            pc, static_cast<uint32_t>(std::min<uint64_t>(tile_count, kMaxWorkgroups)),
            static_cast<uint32_t>((tile_count + kMaxWorkgroups - 1) / kMaxWorkgroups));
      return result;
    }
  }
  api.recorder().access({&bq, &bk, &bv, b_indptr.get(), b_indices.get(), b_base.get(), &bp},
                        {&bo, &bp});
  SparseAttentionPC pc{};
  shapes(pc);
  api.recorder().dispatch(
      api.pipeline(kSparseRowsShader),
      {api.whole(bq, q.numel()), api.whole(bk, k.numel()), api.whole(bv, v.numel()),
       api.whole(*b_indptr, indptr.size()), api.whole(*b_indices, indices.size()),
       api.whole(*b_base, base.size()), api.whole(bo, lq * H * dv), api.whole(bp, total)},
      pc, static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return result;
}

}  // namespace

std::vector<const VariantKernel*> sparse_kernels() {
  static const VariantKernel sparse_attention{sparse_attention_op(), run_sparse_attention};
  return {&sparse_attention};
}

}  // namespace atlas::vk::variants
