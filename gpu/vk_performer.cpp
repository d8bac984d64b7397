// Performer FAVOR+ attention on the device (shaders/performer.comp): the features of queries
// and keys, then either the linear-time KV / OUT pair (bidirectional, no implicit matrix) or
// the per-row form (causal, or when the trace asks for the implicit attention). Shapes beyond
// one storage-buffer binding run the host reference instead, reported as a fallback.
#include "core/variants/performer/performer_op.h"
#include "gpu/push_constants.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {
constexpr uint32_t kPerformerBindings = 12;
enum PerformerPhase : uint32_t { kFeatQ = 0, kFeatK = 1, kKExp = 2, kKvSum = 3, kOut = 4, kRow = 5 };
}  // namespace

PerformerResult VulkanBackend::performer_attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                                   const DTensor& features, const PerformerArgs& args) {
  const char* op = "performer_attention";
  const GpuBuffer& bq = buf(q, op, "q");
  const GpuBuffer& bk = buf(k, op, "k");
  const GpuBuffer& bv = buf(v, op, "v");
  const GpuBuffer& bw = buf(features, op, "features");
  check_performer_shapes(q.shape, k.shape, v.shape, features.shape, args);
  const int64_t H = args.heads, lq = q.shape[0], lk = k.shape[0], dk = q.shape[1] / H,
                dv = v.shape[1] / H, m = features.shape[1];
  const bool rows = args.causal || args.want_implicit;
  const uint64_t dense = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device =
      ctx_->props.limits.maxPerStageDescriptorStorageBuffers >= kPerformerBindings &&
      lq <= kMaxWorkgroups && lk <= kMaxWorkgroups && m <= kMaxWorkgroups && H <= kMaxWorkgroups &&
      fits(static_cast<uint64_t>(H * lq * m)) && fits(static_cast<uint64_t>(H * lk * m)) &&
      fits(static_cast<uint64_t>(H * m * dv)) && fits(static_cast<uint64_t>(features.numel())) &&
      (!rows || (dense < (1ull << 31) && fits(dense)));
  if (!fits_device) {
    note_fallback("performer_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
                  std::to_string(H) + " heads and " + std::to_string(m) + " features exceeds the kernel's "
                  "limits (one storage-buffer binding per tensor, 65535 workgroups); ran on the host");
    return Backend::performer_attention(q, k, v, features, args);
  }

  PerformerResult r;
  r.out = make({lq, H * dv});
  const DTensor implicit = rows ? make({H, lq, lk}) : DTensor{};
  if (args.want_implicit) r.implicit = implicit;
  if (lq == 0 || lk == 0) {
    if (lq > 0) {  // no keys: every output row is 0, as on the host
      Tensor zeros({lq, H * dv});
      r.out = upload(zeros);
    }
    return r;
  }

  const DTensor pq = make({H, lq, m}), pk = make({H, lk, m}), kmax = make({H, lk});
  const DTensor kv = rows ? DTensor{} : make({H, m, dv}), z = rows ? DTensor{} : make({H, m});
  uint32_t flags = args.causal ? 1u : 0u;
  AttentionMask padding;
  padding.key_valid = args.key_valid;
  const std::shared_ptr<GpuBuffer> key_valid = upload_mask(padding, lq, lk).key_valid;
  if (key_valid) flags |= 2u;
  std::shared_ptr<GpuBuffer> sink = ctx_->acquire(BufferKind::Device, 256);
  auto or_sink = [&](const DTensor& t, const char* what) -> const GpuBuffer& { return t ? buf(t, op, what) : *sink; };
  const GpuBuffer& bkv_mask = key_valid ? *key_valid : *dummy_;
  const GpuBuffer &bpq = buf(pq, op, "query features"), &bpk = buf(pk, op, "key features");
  const GpuBuffer& bkmax = buf(kmax, op, "key maxima");
  const GpuBuffer &bkvs = or_sink(kv, "kv"), &bz = or_sink(z, "z");
  const GpuBuffer& bo = buf(r.out, op, "output");
  const GpuBuffer& bimp = or_sink(implicit, "implicit attention");
  auto n_or_1 = [](const DTensor& t) { return t ? static_cast<uint64_t>(t.numel()) : 1; };
  const std::vector<Binding> bindings = {
      whole(bq, q.numel()),         whole(bk, k.numel()),        whole(bv, v.numel()),
      whole(bw, features.numel()),  whole(bkv_mask, key_valid ? lk : 1),
      whole(bpq, pq.numel()),       whole(bpk, pk.numel()),      whole(bkmax, kmax.numel()),
      whole(bkvs, n_or_1(kv)),      whole(bz, n_or_1(z)),        whole(bo, r.out.numel()),
      whole(bimp, n_or_1(implicit))};
  const Pipeline& pipe = pipes_->get(ShaderId::Performer);
  PerformerPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dk = static_cast<uint32_t>(dk);
  pc.dv = static_cast<uint32_t>(dv);
  pc.m = static_cast<uint32_t>(m);
  pc.flags = flags;
  // Every dispatch declares all bindings: each phase reads what the one before wrote, so the
  // tracker puts one barrier between consecutive phases.
  auto phase = [&](PerformerPhase p, int64_t groups) {
    pc.phase = p;
    rec_->access({&bq, &bk, &bv, &bw, &bkv_mask, &bpq, &bpk, &bkmax, &bkvs, &bz},
                 {&bpq, &bpk, &bkmax, &bkvs, &bz, &bo, &bimp});
    rec_->dispatch(pipe, bindings, pc, static_cast<uint32_t>(groups), static_cast<uint32_t>(H));
  };
  phase(kFeatQ, lq);
  phase(kFeatK, lk);
  phase(kKExp, lk);
  if (rows) {
    phase(kRow, lq);
  } else {
    phase(kKvSum, m);
    phase(kOut, lq);
  }
  return r;
}

}  // namespace atlas::vk
