// Seed 004's score functions on the device (shaders/score_attention.comp): one dispatch of
// (Lq, heads) workgroups writing the output, the probabilities and the masked scores. Heads
// wider than the kernel's shared vector (256), or shapes beyond one storage-buffer binding,
// run the host reference instead, reported as a fallback.
#include <algorithm>

#include "core/tensor/error.h"
#include "gpu/push_constants.h"
#include "core/variants/score_functions/score_attention_op.h"
#include "gpu/vk_backend_impl.h"

namespace atlas::vk {

namespace {
constexpr uint32_t kScoreBindings = 13;
constexpr int64_t kMaxVector = 256;    // MAX_VEC in the shader
}  // namespace

AttentionResult VulkanBackend::score_attention(const DTensor& q, const DTensor& k, const DTensor& v,
                                               const ScoreAttentionArgs& args) {
  const char* op = "score_attention";
  const GpuBuffer& bq = buf(q, op, "q");
  const GpuBuffer& bk = buf(k, op, "k");
  const GpuBuffer& bv = buf(v, op, "v");
  check_score_attention_shapes(q.shape, k.shape, v.shape, args);
  const int64_t H = args.attn.heads, lq = q.shape[0], lk = k.shape[0], dh = q.shape[1] / H;
  const bool additive = args.function == ScoreFunction::Additive;
  const int64_t d_attn = additive ? args.w1.shape[1] : 0;
  const AttentionMask& mask = args.attn.mask;

  const uint64_t total = static_cast<uint64_t>(H * lq * lk);
  const bool fits_device =
      ctx_->props.limits.maxPerStageDescriptorStorageBuffers >= kScoreBindings &&
      lq <= kMaxWorkgroups && lk <= kMaxWorkgroups && H <= kMaxWorkgroups && dh <= kMaxVector &&
      d_attn <= kMaxVector && total < (1ull << 31) && fits(total) &&
      fits(static_cast<uint64_t>(k.numel())) && fits(static_cast<uint64_t>(lk * H * d_attn)) &&
      (!args.w || fits(static_cast<uint64_t>(args.w.numel()))) &&
      (!additive || fits(static_cast<uint64_t>(args.w1.numel()))) &&
      std::abs(mask.causal_offset) < (int64_t{1} << 30);
  if (!fits_device) {
    note_fallback("score_attention: q " + shape_str(q.shape) + " k " + shape_str(k.shape) + " with " +
                  std::to_string(H) + " heads exceeds the kernel's limits (d_head and d_attn <= 256, "
                  "one storage-buffer binding per tensor, Lq <= 65535); ran on the host");
    return Backend::score_attention(q, k, v, args);
  }

  AttentionResult r;
  r.out = make({lq, H * dh});
  DTensor probs = make({H, lq, lk});  // the kernel's scratch row buffer, so it always exists
  if (args.attn.want_probs) r.probs = probs;
  if (args.attn.want_scores) r.scores = make({H, lq, lk});
  if (lq == 0) return r;

  uint32_t flags = 0;
  const MaskBuffers masks = upload_mask(mask, lq, lk);
  const std::shared_ptr<GpuBuffer>& key_valid = masks.key_valid;
  const std::shared_ptr<GpuBuffer>& allowed = masks.allowed;
  if (key_valid) flags |= kScoreKeyValid;
  if (allowed) flags |= kScoreAllowed;
  if (mask.causal) flags |= kScoreCausal;
  if (r.scores) flags |= kScoreScores;

  std::shared_ptr<GpuBuffer> sink = ctx_->acquire(BufferKind::Device, 256);
  auto in_or_dummy = [&](const DTensor& t, const char* what) -> const GpuBuffer& {
    return t ? buf(t, op, what) : *dummy_;
  };
  const GpuBuffer& bw = in_or_dummy(args.w, "W_a");
  const GpuBuffer& bw1 = in_or_dummy(args.w1, "W1");
  const GpuBuffer& bw2 = in_or_dummy(args.w2, "W2");
  const GpuBuffer& bva = in_or_dummy(args.v_a, "v_a");
  const GpuBuffer& bkv = key_valid ? *key_valid : *dummy_;
  const GpuBuffer& bal = allowed ? *allowed : *dummy_;
  const GpuBuffer& bo = buf(r.out, op, "output");
  const GpuBuffer& bp = buf(probs, op, "probs");
  const GpuBuffer& bs = r.scores ? buf(r.scores, op, "scores") : *sink;
  // Additive: W2_h k_j for every key and head, projected once by a first dispatch.
  const DTensor key_proj = additive ? make({lk, H, d_attn}) : DTensor{};
  const GpuBuffer& bwk = additive ? buf(key_proj, op, "key projection") : *sink;

  auto size_of = [](const DTensor& t) { return t ? static_cast<uint64_t>(t.numel()) : 1; };
  const std::vector<Binding> bindings = {
      whole(bq, q.numel()),
      whole(bk, k.numel()),
      whole(bv, v.numel()),
      whole(bkv, key_valid ? lk : 1),
      whole(bal, allowed ? (lq * lk + 31) / 32 : 1),
      whole(bw, size_of(args.w)),
      whole(bw1, size_of(args.w1)),
      whole(bw2, size_of(args.w2)),
      whole(bva, size_of(args.v_a)),
      whole(bo, lq * H * dh),
      whole(bp, total),
      whole(bs, r.scores ? total : 1),
      whole(bwk, additive ? lk * H * d_attn : 1)};

  ScoreAttentionPC pc{};
  pc.lq = static_cast<uint32_t>(lq);
  pc.lk = static_cast<uint32_t>(lk);
  pc.heads = static_cast<uint32_t>(H);
  pc.dh = static_cast<uint32_t>(dh);
  pc.flags = flags;
  pc.causal_offset = static_cast<int32_t>(std::clamp<int64_t>(mask.causal_offset, -lq - 1, lk + 1));
  pc.function = static_cast<uint32_t>(args.function);
  pc.d_attn = static_cast<uint32_t>(d_attn);
  pc.max_positions = args.function == ScoreFunction::Location ? static_cast<uint32_t>(args.w.shape[1]) : 0;
  pc.strength = args.strength;
  const Pipeline& pipe = pipes_->get(ShaderId::ScoreAttention);
  if (additive) {
    ScoreAttentionPC project = pc;
    project.flags = kScoreProjectKeys;
    // Every bound buffer is declared; the attention dispatch then reads what this one wrote.
    rec_->access({&bq, &bk, &bv, &bkv, &bal, &bw, &bw1, &bw2, &bva}, {&bwk, &bo, &bp, &bs});
    rec_->dispatch(pipe, bindings, project, static_cast<uint32_t>(lk), static_cast<uint32_t>(H));
  }
  rec_->access({&bq, &bk, &bv, &bkv, &bal, &bw, &bw1, &bw2, &bva, &bwk}, {&bo, &bp, &bs});
  rec_->dispatch(pipe, bindings, pc, static_cast<uint32_t>(lq), static_cast<uint32_t>(H));
  return r;
}

}  // namespace atlas::vk
