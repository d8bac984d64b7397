// The Vulkan kernel of the xl_attention op (core/variants/transformer_xl/xl_attention_op.h): one
// dispatch of xl_attention.comp over (Lq, heads) workgroups writing the output, the
// probabilities and, when the trace asks, the scores and the four terms. Shapes beyond one
// storage-buffer binding run the host reference instead, reported as a fallback.
#include "core/variants/transformer_xl/xl_attention_op.h"
#include "gpu/variant_kernel.h"
#include "xl_attention_spv.h"

namespace atlas::vk::variants {

namespace {

// xl_attention.comp's push constants: one workgroup per (query row, head).
enum XlAttentionFlags : uint32_t {
  kXlSameLength = 1,  // keys j <= p - mem_len are hidden too
  kXlTerms = 2,       // write scores and the four terms to bindings 8..12
};
struct XlAttentionPC {
  uint32_t lq, lk, heads, dh;
  uint32_t flags;
  int32_t mem_len;
  int32_t clamp_len;  // < 0: distances are not clamped
  float scale;
};
static_assert(sizeof(XlAttentionPC) <= 128, "Vulkan guarantees only 128 bytes of push constants");

constexpr uint32_t kXlBindings = 13;
const ShaderSpec kXlShader = ATLAS_SHADER_SPEC(xl_attention, kXlBindings, XlAttentionPC);

// Inputs {q, k, v, rk, u, vb} after xl_attention's shape check.
std::vector<DTensor> run_xl_attention(KernelApi& api, const std::vector<DTensor>& in,
                                      const void* a) {
  const XlAttentionArgs& args = *static_cast<const XlAttentionArgs*>(a);
  const char* op = "xl_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2), &rk = in.at(3), &u = in.at(4),
                &vb = in.at(5);
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const GpuBuffer& brk = api.buffer(rk, op, "rk");
  const GpuBuffer& bu = api.buffer(u, op, "u");
  const GpuBuffer& bvb = api.buffer(vb, op, "v bias");
  const int64_t H = args.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device = api.max_storage_buffers() >= kXlBindings && lq <= kMaxWorkgroups &&
                           H <= kMaxWorkgroups && total < (1ull << 31) && api.fits(total) &&
                           api.fits(static_cast<uint64_t>(k.numel())) &&
                           api.fits(static_cast<uint64_t>(rk.numel())) &&
                           args.mem_len < (1ll << 30) && args.clamp_len < (1ll << 30);
  if (!fits_device)
    return api.on_host(
        xl_attention_op(), in, a,
        "xl_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
            std::to_string(H) +
            " heads exceeds the kernel's limits (one storage-buffer binding per tensor, "
            "Lq <= 65535, 13 bindings); ran on the host");

  const DTensor out = api.make({lq, H * dh});
  const DTensor probs =
      api.make({H, lq, lk});  // the kernel's scratch row buffer, so it always exists
  std::vector<DTensor> result = {out};
  if (args.want_probs) result.push_back(probs);
  DTensor terms[5];  // scores, a, b, c, d when want_terms
  if (args.want_terms)
    for (DTensor& t : terms) result.push_back(t = api.make({H, lq, lk}));
  if (lq == 0) return result;

  // Without want_terms the terms' bindings take the placeholder (never written then).
  auto out_or_unused = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? api.buffer(t, op, what) : api.placeholder();
  };
  const GpuBuffer& bo = api.buffer(out, op, "output");
  const GpuBuffer& bp = api.buffer(probs, op, "probs");
  const GpuBuffer& bs = out_or_unused(terms[0], "scores");
  const GpuBuffer& ba = out_or_unused(terms[1], "term a");
  const GpuBuffer& bb = out_or_unused(terms[2], "term b");
  const GpuBuffer& bc = out_or_unused(terms[3], "term c");
  const GpuBuffer& bd = out_or_unused(terms[4], "term d");
  api.recorder().access({&bq, &bk, &bv, &brk, &bu, &bvb}, {&bo, &bp, &bs, &ba, &bb, &bc, &bd});

  const uint64_t nt = args.want_terms ? total : 1;
  const std::vector<Binding> bindings = {
      api.whole(bq, q.numel()),   api.whole(bk, k.numel()), api.whole(bv, v.numel()),
      api.whole(brk, rk.numel()), api.whole(bu, u.numel()), api.whole(bvb, vb.numel()),
      api.whole(bo, lq * H * dh), api.whole(bp, total),     api.whole(bs, nt),
      api.whole(ba, nt),          api.whole(bb, nt),        api.whole(bc, nt),
      api.whole(bd, nt)};

  XlAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.flags = (args.same_length ? kXlSameLength : 0u) | (args.want_terms ? kXlTerms : 0u);
  pc.mem_len = static_cast<int32_t>(args.mem_len);
  pc.clamp_len = static_cast<int32_t>(args.clamp_len > 0 ? args.clamp_len : -1);  // <= 0: none
  pc.scale = args.scale;
  api.recorder().dispatch(api.pipeline(kXlShader), bindings, pc, static_cast<uint32_t>(lq),
                          static_cast<uint32_t>(H));
  return result;
}

}  // namespace

std::vector<const VariantKernel*> transformer_xl_kernels() {
  static const VariantKernel xl_attention{xl_attention_op(), run_xl_attention};
  return {&xl_attention};
}

}  // namespace atlas::vk::variants
