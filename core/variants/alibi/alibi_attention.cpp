// ALiBi self-attention heads on the backend (alibi_attention.h): scale 1/sqrt(d_head), the
// sub-layer's mask, the slopes 2^(-b h / H) (alibi_slopes.h) through the alibi_attention module
// op (host reference alibi_attention_op.cpp, Vulkan kernel gpu/variants/alibi/).
#include "core/variants/alibi/alibi_attention.h"

#include <cmath>

#include "core/model/forward_pass.h"
#include "core/variants/alibi/alibi_attention_op.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/alibi/alibi_slopes.h"

namespace atlas {

DTensor alibi_attention_layer(ForwardPass& pass, const DTensor& q, const DTensor& k,
                              const DTensor& v, const std::string& prefix,
                              const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = pass.config();
  const TraceOptions& topt = pass.options().trace;
  const AlibiConfig* alibi = alibi_of(c);
  const int64_t H = c.n_heads;

  AlibiAttentionArgs args;
  args.attn.heads = static_cast<int>(H);
  args.attn.scale = 1.0f / std::sqrt(static_cast<float>(c.d_head()));
  args.attn.mask = mask;
  args.attn.want_probs = topt.attention;
  args.attn.want_scores = topt.scores;
  args.slopes = alibi_slopes(H, alibi ? alibi->bias_max : AlibiConfig{}.bias_max);

  if (topt.positional) {  // rows d = Lk - Lq .. Lk - 1 (all of them without a cached prefix)
    const int64_t lq = q.shape[0], lk = k.shape[0];
    Tensor bias({lq, H});
    for (int64_t r = 0; r < lq; ++r)
      for (int64_t h = 0; h < H; ++h)
        bias.data[size_t(r * H + h)] = alibi_distance_bias(args.slopes[size_t(h)], lk - lq + r);
    pass.trace().add(prefix + kAlibiDistanceBiasSuffix,
                     "ALiBi bias -m_h d on the score of a key d positions away, per distance "
                     "d = 0..L-1 and head (row 1: minus the slopes) [L, heads]",
                     std::move(bias));
  }

  const AttentionResult r = alibi_attention(pass.backend(), q, k, v, args);
  if (topt.attention) pass.trace_later(traced_name, "attention probabilities [heads, Lq, Lk]", r.probs);
  if (topt.scores)
    pass.trace_later(companion_array_name(traced_name, Companion::Scores),
                     "pre-softmax scores q.k/sqrt(d_head) - m_h |i - j|, masked = -inf [heads, Lq, Lk]",
                     r.scores);
  return r.out;
}

}  // namespace atlas
