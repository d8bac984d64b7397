// Attention on the device (shaders/attention.comp): masked, scaled dot-product softmax per
// head, writing the output and, when asked, probabilities and masked scores [heads, Lq, Lk].
#include <algorithm>

#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {

// Any d_head works in the kernel (chunks of 32, passes of 64 value dims), but each extra 64
// value dims costs a full pass over the keys; beyond this the CPU is the better place.
constexpr int64_t kMaxHeadDim = 512;

}  // namespace

AttentionResult VulkanBackend::attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                         const AttentionArgs& args) {
  const GpuBuffer& bq = buf(q, "attention", "q");
  const GpuBuffer& bk = buf(k, "attention", "k");
  const GpuBuffer& bv = buf(v, "attention", "v");
  const int64_t H = args.heads;
  if (H < 1 || q.shape.size() != 2 || k.shape.size() != 2 || v.shape.size() != 2)
    fail("attention", "q, k, v must be 2-D and heads >= 1; got q " + shape_str(q.shape) + " k " +
                          shape_str(k.shape) + " v " + shape_str(v.shape) + " heads " +
                          std::to_string(H));
  const int64_t lq = q.shape[0], lk = k.shape[0];
  if (q.shape[1] != k.shape[1] || q.shape[1] % H != 0 || v.shape[1] % H != 0 || v.shape[0] != lk)
    fail("attention", "shapes q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " v " +
                          shape_str(v.shape) + " do not split into " + std::to_string(H) +
                          " heads");
  const int64_t dh = q.shape[1] / H, dv = v.shape[1] / H;
  const AttentionMask& mask = args.mask;
  if (!mask.key_valid.empty() && static_cast<int64_t>(mask.key_valid.size()) != lk)
    fail("attention", "key_valid has " + std::to_string(mask.key_valid.size()) + " entries for " +
                          std::to_string(lk) + " keys");
  if (!mask.allowed.empty() && static_cast<int64_t>(mask.allowed.size()) != lq * lk)
    fail("attention", "allowed mask has " + std::to_string(mask.allowed.size()) +
                          " entries, expected " + std::to_string(lq) + " x " + std::to_string(lk));

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device = dh <= kMaxHeadDim && dv <= kMaxHeadDim && total < (1ull << 31) &&
                           fits(static_cast<uint64_t>(q.numel())) &&
                           fits(static_cast<uint64_t>(k.numel())) &&
                           fits(static_cast<uint64_t>(v.numel())) &&
                           fits(static_cast<uint64_t>(lq * H * dv)) &&
                           fits(static_cast<uint64_t>(lk)) && fits(static_cast<uint64_t>(lq * lk / 32 + 1)) &&
                           rows_per_window(static_cast<uint64_t>(lk)) >= 16;
  if (!fits_device) {
    note_fallback("attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
                  std::to_string(H) + " heads exceeds the kernel's limits (head size <= " +
                  std::to_string(kMaxHeadDim) + ", buffers within the storage-buffer range); " +
                  "ran on the CPU backend");
    AttentionResult c = cpu().attention(to_cpu(q), to_cpu(k), to_cpu(v), args);
    return AttentionResult{from_cpu(c.out), from_cpu(c.probs), from_cpu(c.scores)};
  }

  AttentionResult r;
  r.out = make({lq, H * dv});
  if (args.want_probs) r.probs = make({H, lq, lk});
  if (args.want_scores) r.scores = make({H, lq, lk});
  if (lq == 0) return r;

  uint32_t flags = 0;
  const MaskBuffers masks = upload_mask(mask, lq, lk, /*window_in_kernel=*/true);
  const std::shared_ptr<GpuBuffer>& key_valid = masks.key_valid;
  const std::shared_ptr<GpuBuffer>& allowed = masks.allowed;
  if (key_valid) flags |= kAttnKeyValid;
  if (allowed) flags |= kAttnAllowed;
  if (mask.causal) flags |= kAttnCausal;
  const bool probs = args.want_probs && lk > 0, scores = args.want_scores && lk > 0;
  if (probs) flags |= kAttnProbs;
  if (scores) flags |= kAttnScores;
  if (dv == 0 && !probs && !scores) return r;  // nothing to compute

  const GpuBuffer& bo = buf(r.out, "attention", "output");
  // Unused optional inputs read the shared dummy; unused outputs get a per-op sink, because
  // the shader declares them writable and two dispatches "writing" one buffer would be a
  // hazard to the barrier tracker and to synchronization validation.
  std::shared_ptr<GpuBuffer> sink;
  if (!probs || !scores) sink = ctx_->acquire(BufferKind::Device, 256);
  const GpuBuffer& bp = probs ? buf(r.probs, "attention", "probs") : *sink;
  const GpuBuffer& bs = scores ? buf(r.scores, "attention", "scores") : *sink;
  const GpuBuffer& bkv = key_valid ? *key_valid : *dummy_;
  const GpuBuffer& bal = allowed ? *allowed : *dummy_;
  const Pipeline& p = pipes_->get(ShaderId::Attention);
  // probs is read as well as written (raw scores are staged in it).
  auto declare = [&] { rec_->access({&bq, &bk, &bv, &bkv, &bal, &bp}, {&bo, &bp, &bs}); };

  // The causal test is j - i > offset with j - i in (-lq, lk): clamping keeps it in int32.
  const int64_t off = std::clamp<int64_t>(mask.causal_offset, -lq - 1, lk + 1);
  AttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.dv = static_cast<uint32_t>(dv);
  pc.flags = flags;
  pc.causal_offset = static_cast<int32_t>(off);
  // A window wider than every distance hides nothing; clamped like the offset.
  pc.window = mask.causal ? static_cast<int32_t>(std::clamp<int64_t>(mask.window, 0, lq + lk + 2)) : 0;
  pc.scale = args.scale;
  const Binding fixed[] = {whole(bq, q.numel()), whole(bk, k.numel()), whole(bv, v.numel()),
                           whole(bkv, key_valid ? lk : 1),
                           whole(bal, allowed ? (lq * lk + 31) / 32 : 1),
                           whole(bo, lq * H * dv)};
  auto bindings = [&](const Window& wp, const Window& ws) {
    return std::vector<Binding>{fixed[0], fixed[1], fixed[2], fixed[3],
                                fixed[4], fixed[5], wp.binding, ws.binding};
  };
  const Window none{whole(sink ? *sink : *dummy_, 1), 0};
  // A workgroup covers 16 query rows; maxComputeWorkGroupCount is at least 65535.
  constexpr int64_t kRowsPerGroup = 16, kMaxGroups = kMaxWorkgroups;
  auto dispatch = [&](int64_t h0, int64_t nheads, int64_t r0, int64_t cnt, const Window& wp,
                      const Window& ws) {
    pc.head0 = static_cast<uint32_t>(h0);
    pc.row0 = static_cast<uint32_t>(r0);
    pc.row_end = static_cast<uint32_t>(r0 + cnt);
    pc.probs_base = wp.base;
    pc.scores_base = ws.base;
    // Every dispatch binds all of `out` (heads interleave in it), so split dispatches are
    // ordered by barriers; they only happen for inputs too large for one binding.
    declare();
    rec_->dispatch(p, bindings(wp, ws), pc,
                   static_cast<uint32_t>((cnt + kRowsPerGroup - 1) / kRowsPerGroup),
                   static_cast<uint32_t>(nheads));
  };

  if (!probs && !scores) {
    for (int64_t r0 = 0; r0 < lq; r0 += kMaxGroups * kRowsPerGroup)
      dispatch(0, H, r0, std::min(kMaxGroups * kRowsPerGroup, lq - r0), none, none);
    return r;
  }
  if (fits(total) && lq <= kMaxGroups * kRowsPerGroup) {  // one dispatch for everything
    dispatch(0, H, 0, lq, probs ? Window{whole(bp, total), 0} : none,
             scores ? Window{whole(bs, total), 0} : none);
    return r;
  }
  // [heads, Lq, Lk] larger than one binding: per head, blocks of rows (a multiple of the
  // workgroup's 16), each bound as a window.
  const int64_t rows = std::min<int64_t>(
      kMaxGroups * kRowsPerGroup,
      static_cast<int64_t>(rows_per_window(static_cast<uint64_t>(lk))) / kRowsPerGroup *
          kRowsPerGroup);
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t r0 = 0; r0 < lq; r0 += rows) {
      const int64_t cnt = std::min(rows, lq - r0);
      const uint64_t first = static_cast<uint64_t>((h * lq + r0) * lk);
      const uint64_t count = static_cast<uint64_t>(cnt * lk);
      dispatch(h, 1, r0, cnt, probs ? window(bp, first, count) : none,
               scores ? window(bs, first, count) : none);
    }
  }
  return r;
}

}  // namespace atlas::vk
