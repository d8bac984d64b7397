// The Vulkan kernel of the relative_attention op (Shaw relative positions and adaptive-span soft
// masks; core/variants/relative_attention/relative_attention_op.h): one dispatch of
// relative_attention.comp over (Lq, heads) workgroups writing the output, the probabilities and
// whatever terms the trace asked for. Shapes beyond one storage-buffer binding, or a device with
// too few storage-buffer bindings, run the host reference instead, reported as a fallback.
#include <algorithm>
#include <cstring>

#include "core/variants/relative_attention/relative_attention_op.h"
#include "gpu/variant_kernel.h"
#include "relative_attention_spv.h"

namespace atlas::vk::variants {

namespace {

// relative_attention.comp's push constants: one workgroup per (query row, head).
enum RelativeAttentionFlags : uint32_t {
  kRelKeyValid = 1,
  kRelAllowed = 2,
  kRelCausal = 4,
  kRelShaw = 8,        // bindings 5, 6 hold a^K, a^V [2k+1, d]
  kRelSpan = 16,       // binding 7 holds z [heads, Lq]
  kRelSpanAfter = 32,  // mask after the softmax and renormalise
  kRelScores = 64,     // write scores to binding 10
  kRelTerms = 128,     // write the Shaw key / value terms to bindings 11, 12
  kRelSpanMask = 256,  // write the soft mask to binding 13
};
struct RelativeAttentionPC {
  uint32_t lq, lk, heads, dh, dv;
  uint32_t flags;
  int32_t causal_offset;
  float scale;
  int32_t max_distance;
  float span_ramp;
  int32_t span_max;
  int32_t span_offset;  // the adaptive-span distance convention (0 paper, 1 reference)
};
static_assert(sizeof(RelativeAttentionPC) <= 128,
              "Vulkan guarantees only 128 bytes of push constants");

constexpr uint32_t kRelativeBindings = 14;
const ShaderSpec kRelativeShader =
    ATLAS_SHADER_SPEC(relative_attention, kRelativeBindings, RelativeAttentionPC);

// Inputs {q, k, v, then rel_k, rel_v with Shaw} after relative_attention's shape check.
std::vector<DTensor> run_relative_attention(KernelApi& api, const std::vector<DTensor>& in,
                                            const void* a) {
  const RelativeOpArgs& args = *static_cast<const RelativeOpArgs*>(a);
  const char* op = "relative_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const bool shaw = in.size() == kRelativeInputsWithShaw, span = args.span();
  const DTensor none;
  const DTensor &rel_k = shaw ? in[3] : none, &rel_v = shaw ? in[4] : none;
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const int64_t H = args.attn.heads;
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  const int64_t kd = args.max_distance;
  const AttentionMask& mask = args.attn.mask;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device =
      api.max_storage_buffers() >= kRelativeBindings && lq <= kMaxWorkgroups &&
      H <= kMaxWorkgroups && total < (1ull << 31) && api.fits(total) &&
      api.fits(static_cast<uint64_t>(q.numel())) && api.fits(static_cast<uint64_t>(k.numel())) &&
      api.fits(static_cast<uint64_t>(v.numel())) && api.fits(static_cast<uint64_t>(lq * H * dv)) &&
      api.fits(static_cast<uint64_t>(lq * lk / 32 + 1)) && api.fits(static_cast<uint64_t>(lk)) &&
      std::abs(mask.causal_offset) < (int64_t{1} << 30) && kd < (int64_t{1} << 30) &&
      args.span_max < (int64_t{1} << 30);
  if (!fits_device)
    return api.on_host(relative_attention_op(), in, a,
                       "relative_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                           " with " + std::to_string(H) +
                           " heads exceeds the kernel's limits (one storage-buffer binding per "
                           "tensor, Lq <= 65535, 14 bindings); ran on the host");

  const DTensor out = api.make({lq, H * dv});
  // The probabilities are the kernel's scratch row buffer, so they always exist.
  const DTensor probs = api.make({H, lq, lk});
  const bool terms = shaw && args.want_terms, want_mask = span && args.want_span_mask;
  const DTensor scores = args.attn.want_scores ? api.make({H, lq, lk}) : DTensor{};
  const DTensor key_term = terms ? api.make({H, lq, lk}) : DTensor{};
  const DTensor value_term = terms ? api.make({H, lq, dv}) : DTensor{};
  const DTensor span_mask = want_mask ? api.make({H, lq, lk}) : DTensor{};
  std::vector<DTensor> result = {out};
  if (args.attn.want_probs) result.push_back(probs);
  for (const DTensor* t : {&scores, &key_term, &value_term, &span_mask})
    if (*t) result.push_back(*t);
  if (lq == 0) return result;

  uint32_t flags = 0;
  const KernelApi::MaskBuffers masks = api.mask_buffers(mask, lq, lk);
  const std::shared_ptr<GpuBuffer>& key_valid = masks.key_valid;
  const std::shared_ptr<GpuBuffer>& allowed = masks.allowed;
  std::shared_ptr<GpuBuffer> z;
  if (key_valid) flags |= kRelKeyValid;
  if (allowed) flags |= kRelAllowed;
  if (span) {
    std::vector<uint32_t> words(args.span_z.size());  // the floats' bits
    std::memcpy(words.data(), args.span_z.data(), words.size() * 4);
    z = api.upload_words(words);
    flags |= kRelSpan;
    if (args.span_after) flags |= kRelSpanAfter;
  }
  if (mask.causal) flags |= kRelCausal;
  if (shaw) flags |= kRelShaw;
  if (scores) flags |= kRelScores;
  if (terms) flags |= kRelTerms;
  if (want_mask) flags |= kRelSpanMask;

  // The bindings a call does not use take the placeholder (never read or written then).
  auto or_placeholder = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? api.buffer(t, op, what) : api.placeholder();
  };
  const GpuBuffer& bo = api.buffer(out, op, "output");
  const GpuBuffer& bp = api.buffer(probs, op, "probs");
  const GpuBuffer& bs = or_placeholder(scores, "scores");
  const GpuBuffer& bkt = or_placeholder(key_term, "key term");
  const GpuBuffer& bvt = or_placeholder(value_term, "value term");
  const GpuBuffer& bm = or_placeholder(span_mask, "span mask");
  const GpuBuffer& brk = or_placeholder(rel_k, "rel_k");
  const GpuBuffer& brv = or_placeholder(rel_v, "rel_v");
  const GpuBuffer& bkv = key_valid ? *key_valid : api.placeholder();
  const GpuBuffer& bal = allowed ? *allowed : api.placeholder();
  const GpuBuffer& bz = z ? *z : api.placeholder();
  api.recorder().access({&bq, &bk, &bv, &bkv, &bal, &brk, &brv, &bz, &bp},
                        {&bo, &bp, &bs, &bkt, &bvt, &bm});

  auto bind = [&](const GpuBuffer& b, bool used, int64_t n) { return api.whole(b, used ? n : 1); };
  const std::vector<Binding> bindings = {api.whole(bq, q.numel()),
                                         api.whole(bk, k.numel()),
                                         api.whole(bv, v.numel()),
                                         bind(bkv, key_valid != nullptr, lk),
                                         bind(bal, allowed != nullptr, (lq * lk + 31) / 32),
                                         bind(brk, shaw, rel_k.numel()),
                                         bind(brv, shaw, rel_v.numel()),
                                         bind(bz, span, H * lq),
                                         api.whole(bo, lq * H * dv),
                                         api.whole(bp, H * lq * lk),
                                         bind(bs, static_cast<bool>(scores), H * lq * lk),
                                         bind(bkt, terms, H * lq * lk),
                                         bind(bvt, terms, H * lq * dv),
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
  api.recorder().dispatch(api.pipeline(kRelativeShader), bindings, pc, static_cast<uint32_t>(lq),
                          static_cast<uint32_t>(H));
  return result;
}

}  // namespace

std::vector<const VariantKernel*> relative_attention_kernels() {
  static const VariantKernel relative_attention{relative_attention_op(), run_relative_attention};
  return {&relative_attention};
}

}  // namespace atlas::vk::variants
