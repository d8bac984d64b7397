// Shaw relative positions and adaptive-span soft masks on the device
// (shaders/relative_attention.comp): one dispatch of (Lq, heads) workgroups writing the
// output, the probabilities and whatever terms the trace asked for. Shapes beyond one
// storage-buffer binding, or a device with too few storage-buffer bindings, run the host
// reference instead, reported as a fallback.
#include <algorithm>

#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {

constexpr uint32_t kRelativeBindings = 14;

}  // namespace

RelativeAttentionResult VulkanBackend::relative_attention(const DTensor& q, const DTensor& k,
                                                          const DTensor& v,
                                                          const RelativeAttentionArgs& args) {
  const GpuBuffer& bq = buf(q, "relative_attention", "q");
  const GpuBuffer& bk = buf(k, "relative_attention", "k");
  const GpuBuffer& bv = buf(v, "relative_attention", "v");
  const int64_t H = args.attn.heads;
  if (H < 1 || q.shape.size() != 2 || k.shape.size() != 2 || v.shape.size() != 2 ||
      q.shape[1] != k.shape[1] || q.shape[1] % H != 0 || v.shape[1] % H != 0 ||
      v.shape[0] != k.shape[0])
    fail("relative_attention", "shapes q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                                   " v " + shape_str(v.shape) + " do not split into " +
                                   std::to_string(H) + " heads");
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  const bool shaw = args.shaw(), span = args.span();
  const int64_t kd = args.max_distance;
  if (shaw) {
    if (!args.rel_v) fail("relative_attention", "rel_k given without rel_v");
    if (args.rel_k.shape != Shape{2 * kd + 1, dh} || args.rel_v.shape != Shape{2 * kd + 1, dv})
      fail("relative_attention", "Shaw tables " + shape_str(args.rel_k.shape) + ", " +
                                     shape_str(args.rel_v.shape) +
                                     " are not [2k+1, d_head] for k = " + std::to_string(kd));
  }
  if (span && static_cast<int64_t>(args.span_z.size()) != H * lq)
    fail("relative_attention", "span_z needs heads x Lq = " + std::to_string(H * lq) +
                                   " values, got " + std::to_string(args.span_z.size()));
  const AttentionMask& mask = args.attn.mask;
  if ((!mask.key_valid.empty() && static_cast<int64_t>(mask.key_valid.size()) != lk) ||
      (!mask.allowed.empty() && static_cast<int64_t>(mask.allowed.size()) != lq * lk))
    fail("relative_attention", "mask sizes do not match " + std::to_string(lq) + " queries x " +
                                   std::to_string(lk) + " keys");

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device =
      ctx_->props.limits.maxPerStageDescriptorStorageBuffers >= kRelativeBindings &&
      lq <= kMaxWorkgroups && H <= kMaxWorkgroups && total < (1ull << 31) && fits(total) &&
      fits(static_cast<uint64_t>(q.numel())) && fits(static_cast<uint64_t>(k.numel())) &&
      fits(static_cast<uint64_t>(v.numel())) && fits(static_cast<uint64_t>(lq * H * dv)) &&
      fits(static_cast<uint64_t>(lq * lk / 32 + 1)) && fits(static_cast<uint64_t>(lk)) &&
      std::abs(mask.causal_offset) < (int64_t{1} << 30) && kd < (int64_t{1} << 30) &&
      args.span_max < (int64_t{1} << 30);
  if (!fits_device) {
    note_fallback("relative_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                  " with " + std::to_string(H) + " heads exceeds the kernel's limits (one "
                  "storage-buffer binding per tensor, Lq <= 65535, 14 bindings); ran on the host");
    return Backend::relative_attention(q, k, v, args);
  }

  RelativeAttentionResult r;
  r.out = make({lq, H * dv});
  // The probabilities are the kernel's scratch row buffer, so they always exist.
  DTensor probs = make({H, lq, lk});
  if (args.attn.want_probs) r.probs = probs;
  if (args.attn.want_scores) r.scores = make({H, lq, lk});
  const bool terms = shaw && args.want_terms, want_mask = span && args.want_span_mask;
  if (terms) {
    r.key_term = make({H, lq, lk});
    r.value_term = make({H, lq, dv});
  }
  if (want_mask) r.span_mask = make({H, lq, lk});
  if (lq == 0) return r;

  uint32_t flags = 0;
  const MaskBuffers masks = upload_mask(mask, lq, lk);
  const std::shared_ptr<GpuBuffer>& key_valid = masks.key_valid;
  const std::shared_ptr<GpuBuffer>& allowed = masks.allowed;
  std::shared_ptr<GpuBuffer> z;
  if (key_valid) flags |= kRelKeyValid;
  if (allowed) flags |= kRelAllowed;
  if (span) {
    z = upload_bytes(args.span_z.data(), args.span_z.size() * 4);
    flags |= kRelSpan;
    if (args.span_after) flags |= kRelSpanAfter;
  }
  if (mask.causal) flags |= kRelCausal;
  if (shaw) flags |= kRelShaw;
  if (r.scores) flags |= kRelScores;
  if (terms) flags |= kRelTerms;
  if (want_mask) flags |= kRelSpanMask;

  // Unused inputs read the shared dummy; unused outputs write one per-op sink.
  std::shared_ptr<GpuBuffer> sink = ctx_->acquire(BufferKind::Device, 256);
  auto out_or_sink = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? buf(t, "relative_attention", what) : *sink;
  };
  const GpuBuffer& bo = buf(r.out, "relative_attention", "output");
  const GpuBuffer& bp = buf(probs, "relative_attention", "probs");
  const GpuBuffer& bs = out_or_sink(r.scores, "scores");
  const GpuBuffer& bkt = out_or_sink(r.key_term, "key term");
  const GpuBuffer& bvt = out_or_sink(r.value_term, "value term");
  const GpuBuffer& bm = out_or_sink(r.span_mask, "span mask");
  const GpuBuffer& brk = shaw ? buf(args.rel_k, "relative_attention", "rel_k") : *dummy_;
  const GpuBuffer& brv = shaw ? buf(args.rel_v, "relative_attention", "rel_v") : *dummy_;
  const GpuBuffer& bkv = key_valid ? *key_valid : *dummy_;
  const GpuBuffer& bal = allowed ? *allowed : *dummy_;
  const GpuBuffer& bz = z ? *z : *dummy_;
  rec_->access({&bq, &bk, &bv, &bkv, &bal, &brk, &brv, &bz, &bp},
               {&bo, &bp, &bs, &bkt, &bvt, &bm});

  auto bind = [&](const GpuBuffer& b, bool used, int64_t n) { return whole(b, used ? n : 1); };
  const std::vector<Binding> bindings = {
      whole(bq, q.numel()), whole(bk, k.numel()), whole(bv, v.numel()),
      bind(bkv, key_valid != nullptr, lk), bind(bal, allowed != nullptr, (lq * lk + 31) / 32),
      bind(brk, shaw, args.rel_k.numel()), bind(brv, shaw, args.rel_v.numel()),
      bind(bz, span, H * lq), whole(bo, lq * H * dv), whole(bp, H * lq * lk),
      bind(bs, static_cast<bool>(r.scores), H * lq * lk),
      bind(bkt, terms, H * lq * lk), bind(bvt, terms, H * lq * dv),
      bind(bm, want_mask, H * lq * lk)};

  RelativeAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.dv = static_cast<uint32_t>(dv);
  pc.flags = flags;
  pc.causal_offset = static_cast<int32_t>(std::clamp<int64_t>(mask.causal_offset, -lq - 1, lk + 1));
  pc.scale = args.attn.scale;
  pc.max_distance = static_cast<int32_t>(kd);
  pc.span_ramp = static_cast<float>(args.span_ramp);
  pc.span_max = static_cast<int32_t>(args.span_max);
  pc.span_offset = static_cast<int32_t>(args.span_offset);
  rec_->dispatch(pipes_->get(ShaderId::RelativeAttention), bindings, pc,
                 static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return r;
}

}  // namespace atlas::vk
