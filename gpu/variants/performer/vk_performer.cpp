// The Vulkan kernel of the performer_attention op (core/variants/performer/performer_attention.h):
// the features of queries and keys, then either the linear-time KV / OUT pair (bidirectional,
// no implicit matrix) or the per-row form (causal, or when the trace asks for the implicit
// attention), as phases of performer.comp. Shapes beyond one storage-buffer binding run the
// host reference instead, reported as a fallback.
#include <algorithm>

#include "core/variants/performer/performer_attention.h"
#include "gpu/variant_kernel.h"
#include "performer_spv.h"

namespace atlas::vk::variants {

namespace {

// performer.comp's push constants: one dispatch per phase; flags 1 causal, 2 key_valid bound.
enum PerformerPhase : uint32_t {
  kFeatQ = 0,
  kFeatK = 1,
  kKExp = 2,
  kKvSum = 3,
  kOut = 4,
  kRow = 5
};
struct PerformerPC {
  uint32_t lq, lk, heads, dk, dv, m;
  uint32_t phase;
  uint32_t flags;
};
static_assert(sizeof(PerformerPC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

constexpr uint32_t kPerformerBindings = 12;
const ShaderSpec kPerformerShader = ATLAS_SHADER_SPEC(performer, kPerformerBindings, PerformerPC);

// Inputs {q, k, v, features} after performer_attention's shape check.
std::vector<DTensor> run_performer(KernelApi& api, const std::vector<DTensor>& in, const void* a) {
  const PerformerArgs& args = *static_cast<const PerformerArgs*>(a);
  const char* op = "performer_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2), &features = in.at(3);
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const GpuBuffer& bw = api.buffer(features, op, "features");
  const int64_t H = args.heads, lq = q.shape[0], lk = k.shape[0], dk = q.shape[1] / H,
                dv = v.shape[1] / H, m = features.shape[1];
  const bool rows = args.causal || args.want_implicit;
  const uint64_t dense = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device = api.max_storage_buffers() >= kPerformerBindings &&
                           lq <= kMaxWorkgroups && lk <= kMaxWorkgroups && m <= kMaxWorkgroups &&
                           H <= kMaxWorkgroups && api.fits(static_cast<uint64_t>(H * lq * m)) &&
                           api.fits(static_cast<uint64_t>(H * lk * m)) &&
                           api.fits(static_cast<uint64_t>(H * m * dv)) &&
                           api.fits(static_cast<uint64_t>(features.numel())) &&
                           (!rows || (dense < (1ull << 31) && api.fits(dense)));
  if (!fits_device)
    return api.on_host(
        performer_attention_op(), in, a,
        "performer_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
            std::to_string(H) + " heads and " + std::to_string(m) +
            " features exceeds the kernel's limits (one storage-buffer binding per tensor, "
            "65535 workgroups); ran on the host");

  std::vector<DTensor> out = {api.make({lq, H * dv})};
  const DTensor implicit = rows ? api.make({H, lq, lk}) : DTensor{};
  if (args.want_implicit) out.push_back(implicit);
  if (lq == 0 || lk == 0) {
    if (lq > 0)
      out[0] = api.backend().upload(Tensor({lq, H * dv}));  // no keys: every output row is 0
    return out;
  }

  const DTensor pq = api.make({H, lq, m}), pk = api.make({H, lk, m}), kmax = api.make({H, lk});
  const DTensor kv = rows ? DTensor{} : api.make({H, m, dv}),
                z = rows ? DTensor{} : api.make({H, m});
  uint32_t flags = args.causal ? 1u : 0u;
  std::shared_ptr<GpuBuffer> key_valid;
  if (std::find(args.key_valid.begin(), args.key_valid.end(), uint8_t{0}) != args.key_valid.end()) {
    key_valid =
        api.upload_words(std::vector<uint32_t>(args.key_valid.begin(), args.key_valid.end()));
    flags |= 2u;
  }
  // The bindings a phase does not use take the placeholder (never read or written then).
  auto or_unused = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? api.buffer(t, op, what) : api.placeholder();
  };
  const GpuBuffer& bkv_mask = key_valid ? *key_valid : api.placeholder();
  const GpuBuffer &bpq = api.buffer(pq, op, "query features"),
                  &bpk = api.buffer(pk, op, "key features");
  const GpuBuffer& bkmax = api.buffer(kmax, op, "key maxima");
  const GpuBuffer &bkvs = or_unused(kv, "kv"), &bz = or_unused(z, "z");
  const GpuBuffer& bo = api.buffer(out[0], op, "output");
  const GpuBuffer& bimp = or_unused(implicit, "implicit attention");
  auto n_or_1 = [](const DTensor& t) { return t ? static_cast<uint64_t>(t.numel()) : 1; };
  const std::vector<Binding> bindings = {api.whole(bq, q.numel()),
                                         api.whole(bk, k.numel()),
                                         api.whole(bv, v.numel()),
                                         api.whole(bw, features.numel()),
                                         api.whole(bkv_mask, key_valid ? lk : 1),
                                         api.whole(bpq, pq.numel()),
                                         api.whole(bpk, pk.numel()),
                                         api.whole(bkmax, kmax.numel()),
                                         api.whole(bkvs, n_or_1(kv)),
                                         api.whole(bz, n_or_1(z)),
                                         api.whole(bo, out[0].numel()),
                                         api.whole(bimp, n_or_1(implicit))};
  const Pipeline& pipe = api.pipeline(kPerformerShader);
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
    api.recorder().access({&bq, &bk, &bv, &bw, &bkv_mask, &bpq, &bpk, &bkmax, &bkvs, &bz},
                          {&bpq, &bpk, &bkmax, &bkvs, &bz, &bo, &bimp});
    api.recorder().dispatch(pipe, bindings, pc, static_cast<uint32_t>(groups),
                            static_cast<uint32_t>(H));
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
  return out;
}

}  // namespace

std::vector<const VariantKernel*> performer_kernels() {
  static const VariantKernel performer_attention{performer_attention_op(), run_performer};
  return {&performer_attention};
}

}  // namespace atlas::vk::variants
