// Transformer-XL relative attention on the device (shaders/xl_attention.comp): one dispatch
// of (Lq, heads) workgroups writing the output, the probabilities and, when the trace asks,
// the scores and the four terms. Shapes beyond one storage-buffer binding run the host
// reference instead, reported as a fallback.
#include "core/tensor/error.h"
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {
constexpr uint32_t kXlBindings = 13;
}  // namespace

XlAttentionResult VulkanBackend::xl_attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                              const DTensor& rk, const DTensor& u,
                                              const DTensor& vb, const XlAttentionArgs& args) {
  const char* op = "xl_attention";
  const GpuBuffer& bq = buf(q, op, "q");
  const GpuBuffer& bk = buf(k, op, "k");
  const GpuBuffer& bv = buf(v, op, "v");
  const GpuBuffer& brk = buf(rk, op, "rk");
  const GpuBuffer& bu = buf(u, op, "u");
  const GpuBuffer& bvb = buf(vb, op, "v bias");
  check_xl_attention_shapes(q.shape, k.shape, v.shape, rk.shape, u.shape, vb.shape, args);
  const int64_t H = args.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device = ctx_->props.limits.maxPerStageDescriptorStorageBuffers >= kXlBindings &&
                           lq <= kMaxWorkgroups && H <= kMaxWorkgroups && total < (1ull << 31) &&
                           fits(total) && fits(static_cast<uint64_t>(k.numel())) &&
                           fits(static_cast<uint64_t>(rk.numel())) && args.mem_len < (1ll << 30) &&
                           args.clamp_len < (1ll << 30);
  if (!fits_device) {
    note_fallback("xl_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
                  std::to_string(H) + " heads exceeds the kernel's limits (one storage-buffer "
                  "binding per tensor, Lq <= 65535, 13 bindings); ran on the host");
    return Backend::xl_attention(q, k, v, rk, u, vb, args);
  }

  XlAttentionResult r;
  r.out = make({lq, H * dh});
  DTensor probs = make({H, lq, lk});  // the kernel's scratch row buffer, so it always exists
  if (args.want_probs) r.probs = probs;
  if (args.want_terms)
    for (DTensor* t : {&r.scores, &r.term_a, &r.term_b, &r.term_c, &r.term_d}) *t = make({H, lq, lk});
  if (lq == 0) return r;

  std::shared_ptr<GpuBuffer> sink = ctx_->acquire(BufferKind::Device, 256);
  auto out_or_sink = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? buf(t, op, what) : *sink;
  };
  const GpuBuffer& bo = buf(r.out, op, "output");
  const GpuBuffer& bp = buf(probs, op, "probs");
  const GpuBuffer& bs = out_or_sink(r.scores, "scores");
  const GpuBuffer& ba = out_or_sink(r.term_a, "term a");
  const GpuBuffer& bb = out_or_sink(r.term_b, "term b");
  const GpuBuffer& bc = out_or_sink(r.term_c, "term c");
  const GpuBuffer& bd = out_or_sink(r.term_d, "term d");
  rec_->access({&bq, &bk, &bv, &brk, &bu, &bvb}, {&bo, &bp, &bs, &ba, &bb, &bc, &bd});

  const uint64_t nt = args.want_terms ? total : 1;
  const std::vector<Binding> bindings = {
      whole(bq, q.numel()), whole(bk, k.numel()),   whole(bv, v.numel()),
      whole(brk, rk.numel()), whole(bu, u.numel()), whole(bvb, vb.numel()),
      whole(bo, lq * H * dh), whole(bp, total),     whole(bs, nt),
      whole(ba, nt),          whole(bb, nt),        whole(bc, nt),
      whole(bd, nt)};

  XlAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.flags = (args.same_length ? kXlSameLength : 0u) | (args.want_terms ? kXlTerms : 0u);
  pc.mem_len = static_cast<int32_t>(args.mem_len);
  pc.clamp_len = static_cast<int32_t>(args.clamp_len > 0 ? args.clamp_len : -1);  // <= 0: none
  pc.scale = args.scale;
  rec_->dispatch(pipes_->get(ShaderId::XlAttention), bindings, pc, static_cast<uint32_t>(lq),
                 static_cast<uint32_t>(H));
  return r;
}

}  // namespace atlas::vk
