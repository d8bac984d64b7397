// Sparse CSR attention on the device (shaders/sparse_attention.comp): the heads' patterns are
// uploaded as 32-bit CSR (indptr relative to each head's first nonzero), one dispatch of
// (Lq, heads) workgroups computes softmax over each row's nonzeros only. Patterns or tensors
// beyond one storage-buffer binding run the host reference, reported as a fallback.
#include <algorithm>

#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "core/variants/sparse/sparse_pattern.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {


[[noreturn]] void fail(const std::string& what) {
  throw AtlasError("vulkan backend: sparse_attention: " + what);
}

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
    fail("shapes q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " v " +
         shape_str(v.shape) + " do not split into " + std::to_string(H) + " heads");
  if (static_cast<int64_t>(patterns.size()) != H) fail("need one pattern per head");
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  int64_t total = 0;
  for (const CsrPattern& p : patterns) {
    if (p.rows != lq || p.cols != lk || static_cast<int64_t>(p.indptr.size()) != lq + 1)
      fail("pattern is " + std::to_string(p.rows) + "x" + std::to_string(p.cols) +
           ", attention is " + std::to_string(lq) + "x" + std::to_string(lk));
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
      if (j < 0 || j >= lk) fail("pattern index " + std::to_string(j) + " outside 0.." + std::to_string(lk - 1));
      indices.push_back(static_cast<uint32_t>(j));
    }
  }
  if (indices.empty()) indices.push_back(0);  // a binding needs at least one element
  auto b_indptr = upload_bytes(indptr.data(), indptr.size() * 4);
  auto b_indices = upload_bytes(indices.data(), indices.size() * 4);
  auto b_base = upload_bytes(base.data(), base.size() * 4);

  const GpuBuffer& bo = buf(r.out, "sparse_attention", "output");
  const GpuBuffer& bp = buf(probs, "sparse_attention", "probs");
  rec_->access({&bq, &bk, &bv, b_indptr.get(), b_indices.get(), b_base.get(), &bp}, {&bo, &bp});
  SparseAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.dv = static_cast<uint32_t>(dv);
  pc.scale = scale;
  rec_->dispatch(pipes_->get(ShaderId::SparseAttention),
                 {whole(bq, q.numel()), whole(bk, k.numel()), whole(bv, v.numel()),
                  whole(*b_indptr, indptr.size()), whole(*b_indices, indices.size()),
                  whole(*b_base, base.size()), whole(bo, lq * H * dv), whole(bp, total)},
                 pc, static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return r;
}

}  // namespace atlas::vk
