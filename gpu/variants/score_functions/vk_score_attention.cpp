// The Vulkan kernel of the score_attention op (core/variants/score_functions/score_attention.h):
// one dispatch of score_attention.comp over (Lq, heads) workgroups writing the output, the
// probabilities and the masked scores (additive: a first dispatch projects the keys). Heads
// wider than the kernel's shared vector (256), or shapes beyond one storage-buffer binding,
// run the host reference instead, reported as a fallback.
#include <algorithm>
#include <cstdlib>

#include "core/variants/score_functions/score_attention.h"
#include "gpu/variant_kernel.h"
#include "score_attention_spv.h"

namespace atlas::vk::variants {

namespace {

// score_attention.comp's push constants: one workgroup per (query row, head).
enum ScoreAttentionFlags : uint32_t {
  kScoreKeyValid = 1,
  kScoreAllowed = 2,
  kScoreCausal = 4,
  kScoreScores = 8,        // write masked scores to binding 11
  kScoreProjectKeys = 16,  // additive's first pass: W2_h k_j into binding 12
};
struct ScoreAttentionPC {
  uint32_t lq, lk, heads, dh;
  uint32_t flags;
  int32_t causal_offset;
  uint32_t function;  // ScoreFunction's value (core/variants/score_functions/score_functions_config.h)
  uint32_t d_attn;
  uint32_t max_positions;
  float strength;
};
static_assert(sizeof(ScoreAttentionPC) <= 128,
              "Vulkan guarantees only 128 bytes of push constants");

constexpr uint32_t kScoreBindings = 13;
constexpr int64_t kMaxVector = 256;  // MAX_VEC in the shader
const ShaderSpec kScoreShader =
    ATLAS_SHADER_SPEC(score_attention, kScoreBindings, ScoreAttentionPC);

// Inputs {q, k, v, weights} in the op's order (score_attention.h), after its shape check.
std::vector<DTensor> run_score_attention(KernelApi& api, const std::vector<DTensor>& in,
                                         const void* a) {
  const ScoreOpArgs& args = *static_cast<const ScoreOpArgs*>(a);
  const char* op = "score_attention";
  const DTensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const GpuBuffer& bq = api.buffer(q, op, "q");
  const GpuBuffer& bk = api.buffer(k, op, "k");
  const GpuBuffer& bv = api.buffer(v, op, "v");
  const ScoreWeightInputs<DTensor> weights = score_weight_inputs(in, args.function);
  const DTensor none;
  const DTensor &w = weights.w ? *weights.w : none, &w1 = weights.w1 ? *weights.w1 : none,
                &w2 = weights.w2 ? *weights.w2 : none, &v_a = weights.v_a ? *weights.v_a : none;
  const bool additive = static_cast<bool>(w1);
  const int64_t H = args.attn.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H;
  const int64_t d_attn = additive ? w1.shape[1] : 0;
  const AttentionMask& mask = args.attn.mask;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device = api.max_storage_buffers() >= kScoreBindings && lq <= kMaxWorkgroups &&
                           lk <= kMaxWorkgroups && H <= kMaxWorkgroups && dh <= kMaxVector &&
                           d_attn <= kMaxVector && total < (1ull << 31) && api.fits(total) &&
                           api.fits(static_cast<uint64_t>(k.numel())) &&
                           api.fits(static_cast<uint64_t>(lk * H * d_attn)) &&
                           (!w || api.fits(static_cast<uint64_t>(w.numel()))) &&
                           (!additive || api.fits(static_cast<uint64_t>(w1.numel()))) &&
                           std::abs(mask.causal_offset) < (int64_t{1} << 30);
  if (!fits_device)
    return api.on_host(score_attention_op(), in, a,
                       "score_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) +
                           " with " + std::to_string(H) +
                           " heads exceeds the kernel's limits (d_head and d_attn <= 256, one "
                           "storage-buffer binding per tensor, Lq <= 65535); ran on the host");

  const DTensor out = api.make({lq, H * dh});
  const DTensor probs =
      api.make({H, lq, lk});  // the kernel's scratch row buffer, so it always exists
  const DTensor scores = args.attn.want_scores ? api.make({H, lq, lk}) : DTensor{};
  std::vector<DTensor> result = {out};
  if (args.attn.want_probs) result.push_back(probs);
  if (scores) result.push_back(scores);
  if (lq == 0) return result;

  uint32_t flags = 0;
  const KernelApi::MaskBuffers masks = api.mask_buffers(mask, lq, lk);
  const std::shared_ptr<GpuBuffer>& key_valid = masks.key_valid;
  const std::shared_ptr<GpuBuffer>& allowed = masks.allowed;
  if (key_valid) flags |= kScoreKeyValid;
  if (allowed) flags |= kScoreAllowed;
  if (mask.causal) flags |= kScoreCausal;
  if (scores) flags |= kScoreScores;

  // The bindings a call does not use take the placeholder (never read or written then).
  auto or_placeholder = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? api.buffer(t, op, what) : api.placeholder();
  };
  const GpuBuffer& bw = or_placeholder(w, "W_a");
  const GpuBuffer& bw1 = or_placeholder(w1, "W1");
  const GpuBuffer& bw2 = or_placeholder(w2, "W2");
  const GpuBuffer& bva = or_placeholder(v_a, "v_a");
  const GpuBuffer& bkv = key_valid ? *key_valid : api.placeholder();
  const GpuBuffer& bal = allowed ? *allowed : api.placeholder();
  const GpuBuffer& bo = api.buffer(out, op, "output");
  const GpuBuffer& bp = api.buffer(probs, op, "probs");
  const GpuBuffer& bs = or_placeholder(scores, "scores");
  // Additive: W2_h k_j for every key and head, projected once by a first dispatch.
  const DTensor key_proj = additive ? api.make({lk, H, d_attn}) : DTensor{};
  const GpuBuffer& bwk = or_placeholder(key_proj, "key projection");

  auto size_of = [](const DTensor& t) { return t ? static_cast<uint64_t>(t.numel()) : 1; };
  const std::vector<Binding> bindings = {api.whole(bq, q.numel()),
                                         api.whole(bk, k.numel()),
                                         api.whole(bv, v.numel()),
                                         api.whole(bkv, key_valid ? lk : 1),
                                         api.whole(bal, allowed ? (lq * lk + 31) / 32 : 1),
                                         api.whole(bw, size_of(w)),
                                         api.whole(bw1, size_of(w1)),
                                         api.whole(bw2, size_of(w2)),
                                         api.whole(bva, size_of(v_a)),
                                         api.whole(bo, lq * H * dh),
                                         api.whole(bp, total),
                                         api.whole(bs, scores ? total : 1),
                                         api.whole(bwk, additive ? lk * H * d_attn : 1)};

  ScoreAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.flags = flags;
  pc.causal_offset = static_cast<int32_t>(std::clamp<int64_t>(mask.causal_offset, -lq - 1, lk + 1));
  pc.function = static_cast<uint32_t>(args.function);
  pc.d_attn = static_cast<uint32_t>(d_attn);
  pc.max_positions =
      args.function == ScoreFunction::Location ? static_cast<uint32_t>(w.shape[1]) : 0;
  pc.strength = args.strength;
  const Pipeline& pipe = api.pipeline(kScoreShader);
  Recorder& rec = api.recorder();
  if (additive) {
    ScoreAttentionPC project = pc;
    project.flags = kScoreProjectKeys;
    // Every bound buffer is declared; the attention dispatch then reads what this one wrote.
    rec.access({&bq, &bk, &bv, &bkv, &bal, &bw, &bw1, &bw2, &bva}, {&bwk, &bo, &bp, &bs});
    rec.dispatch(pipe, bindings, project, static_cast<uint32_t>(lk), static_cast<uint32_t>(H));
  }
  rec.access({&bq, &bk, &bv, &bkv, &bal, &bw, &bw1, &bw2, &bva, &bwk}, {&bo, &bp, &bs});
  rec.dispatch(pipe, bindings, pc, static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return result;
}

}  // namespace

std::vector<const VariantKernel*> score_functions_kernels() {
  static const VariantKernel score_attention{score_attention_op(), run_score_attention};
  return {&score_attention};
}

}  // namespace atlas::vk::variants
