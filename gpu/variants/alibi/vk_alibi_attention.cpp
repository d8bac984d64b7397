// The Vulkan kernel of the alibi_attention op (core/variants/alibi/alibi_attention_op.h): one
// dispatch of alibi_attention.comp over (Lq, heads) workgroups writing the output, the
// probabilities and, when asked, the scores. Shapes beyond one storage-buffer binding, or a
// device with too few storage-buffer bindings, run the host reference instead, reported as a
// fallback.
#include <algorithm>
#include <cstring>

#include "alibi_attention_spv.h"
#include "core/variants/alibi/alibi_attention_op.h"
#include "gpu/variant_kernel.h"

namespace atlas::vk::variants {

namespace {

// alibi_attention.comp's push constants: one workgroup per (query row, head).
enum AlibiAttentionFlags : uint32_t {
  kAlibiKeyValid = 1,
  kAlibiAllowed = 2,
  kAlibiCausal = 4,
  kAlibiScores = 8,  // write scores to binding 8
};
struct AlibiAttentionPC {
  uint32_t lq, lk, heads, dh, dv;
  uint32_t flags;
  int32_t causal_offset;
  float scale;
};
static_assert(sizeof(AlibiAttentionPC) <= 128,
              "Vulkan guarantees only 128 bytes of push constants");

constexpr uint32_t kAlibiBindings = 9;
const ShaderSpec kAlibiShader = ATLAS_SHADER_SPEC(alibi_attention, kAlibiBindings, AlibiAttentionPC);

// Inputs {q, k, v} after alibi_attention's shape check.
std::vector<DTensor> run_alibi_attention(KernelApi& api, const std::vector<DTensor>& in,
                                         const void* a) {
  const AlibiAttentionArgs& args = *static_cast<const AlibiAttentionArgs*>(a);
  const char* op = "alibi_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const int64_t H = args.attn.heads;
  const int64_t lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H, dv = v.shape[1] / H;
  const AttentionMask& mask = args.attn.mask;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device =
      api.max_storage_buffers() >= kAlibiBindings && lq <= kMaxWorkgroups &&
      H <= kMaxWorkgroups && total < (1ull << 31) && lk < (int64_t{1} << 30) && api.fits(total) &&
      api.fits(static_cast<uint64_t>(q.numel())) && api.fits(static_cast<uint64_t>(k.numel())) &&
      api.fits(static_cast<uint64_t>(v.numel())) && api.fits(static_cast<uint64_t>(lq * H * dv)) &&
      api.fits(static_cast<uint64_t>(lq * lk / 32 + 1)) && api.fits(static_cast<uint64_t>(lk)) &&
      std::abs(mask.causal_offset) < (int64_t{1} << 30);
  if (!fits_device)
    return api.on_host(alibi_attention_op(), in, a,
                       "alibi_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                           " with " + std::to_string(H) +
                           " heads exceeds the kernel's limits (one storage-buffer binding per "
                           "tensor, Lq <= 65535, 9 bindings); ran on the host");

  const DTensor out = api.make({lq, H * dv});
  // The probabilities are the kernel's scratch row buffer, so they always exist.
  const DTensor probs = api.make({H, lq, lk});
  const DTensor scores = args.attn.want_scores ? api.make({H, lq, lk}) : DTensor{};
  std::vector<DTensor> result = {out};
  if (args.attn.want_probs) result.push_back(probs);
  if (scores) result.push_back(scores);
  if (lq == 0) return result;

  uint32_t flags = 0;
  const KernelApi::MaskBuffers masks = api.mask_buffers(mask, lq, lk);
  if (masks.key_valid) flags |= kAlibiKeyValid;
  if (masks.allowed) flags |= kAlibiAllowed;
  if (mask.causal) flags |= kAlibiCausal;
  if (scores) flags |= kAlibiScores;
  std::vector<uint32_t> words(args.slopes.size());  // the floats' bits
  std::memcpy(words.data(), args.slopes.data(), words.size() * 4);
  const std::shared_ptr<GpuBuffer> slopes = api.upload_words(words);

  const GpuBuffer& bo = api.buffer(out, op, "output");
  const GpuBuffer& bp = api.buffer(probs, op, "probs");
  // The bindings a call does not use take the placeholder (never read or written then).
  const GpuBuffer& bs = scores ? api.buffer(scores, op, "scores") : api.placeholder();
  const GpuBuffer& bkv = masks.key_valid ? *masks.key_valid : api.placeholder();
  const GpuBuffer& bal = masks.allowed ? *masks.allowed : api.placeholder();
  api.recorder().access({&bq, &bk, &bv, &bkv, &bal, slopes.get(), &bp}, {&bo, &bp, &bs});

  auto bind = [&](const GpuBuffer& b, bool used, int64_t n) { return api.whole(b, used ? n : 1); };
  const std::vector<Binding> bindings = {api.whole(bq, q.numel()),
                                         api.whole(bk, k.numel()),
                                         api.whole(bv, v.numel()),
                                         bind(bkv, masks.key_valid != nullptr, lk),
                                         bind(bal, masks.allowed != nullptr, (lq * lk + 31) / 32),
                                         api.whole(*slopes, static_cast<uint64_t>(H)),
                                         api.whole(bo, lq * H * dv),
                                         api.whole(bp, H * lq * lk),
                                         bind(bs, static_cast<bool>(scores), H * lq * lk)};

  AlibiAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.dv = static_cast<uint32_t>(dv);
  pc.flags = flags;
  pc.causal_offset = static_cast<int32_t>(std::clamp<int64_t>(mask.causal_offset, -lq - 1, lk + 1));
  pc.scale = args.attn.scale;
  api.recorder().dispatch(api.pipeline(kAlibiShader), bindings, pc, static_cast<uint32_t>(lq),
                          static_cast<uint32_t>(H));
  return result;
}

}  // namespace

std::vector<const VariantKernel*> alibi_kernels() {
  static const VariantKernel alibi_attention{alibi_attention_op(), run_alibi_attention};
  return {&alibi_attention};
}

}  // namespace atlas::vk::variants
