// Self-attention heads modified by Shaw relative positions and adaptive span
// (relative_attention.h): Shaw relative positions (shaw.cpp) and adaptive span (adaptive_span.cpp),
// alone or together. This file gathers the variant parameters (Shaw tables, span z), calls the
// relative_attention module op (maths and host reference: relative_attention_op.h; Vulkan kernel:
// gpu/variants/relative_attention/) and records the traces and per-layer span summaries.
#include <cmath>
#include <algorithm>

#include "core/tensor/error.h"
#include "core/variants/adaptive_span/span_arrays.h"
#include "core/variants/adaptive_span/span_z.h"
#include "core/model/forward_pass.h"
#include "core/variants/adaptive_span/adaptive_span.h"
#include "core/variants/relative_attention/relative_attention.h"
#include "core/variants/shaw/shaw.h"

namespace atlas {

void append_relative_attention_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  if (!c.shaw() && !c.adaptive_span()) return;
  auto add_for = [&](const std::string& p) {
    if (c.shaw()) {
      const int64_t rows = 2 * c.shaw()->max_distance + 1;
      specs.push_back({p + ".rel_k", {rows, c.d_head()}});
      specs.push_back({p + ".rel_v", {rows, c.d_head()}});
    }
    if (c.adaptive_span()) {
      if (c.adaptive_span()->dynamic) {
        specs.push_back({p + kSpanV, {c.n_heads, c.d_model}});
        specs.push_back({p + kSpanB, {c.n_heads}, InitKind::Zeros});
      } else {
        specs.push_back({p + kSpanZ, {c.n_heads}, InitKind::Constant, c.adaptive_span()->init_z});
      }
    }
  };
  if (c.has_encoder())
    for (int64_t i = 0; i < c.n_layers; ++i) add_for("encoder.layer" + std::to_string(i) + ".attn");
  if (c.has_decoder())
    for (int64_t i = 0; i < c.decoder_layers(); ++i)
      add_for("decoder.layer" + std::to_string(i) + ".self_attn");
}

DTensor relative_attention_layer(ForwardPass& pass, const DTensor& xq_d, const DTensor& q_d,
                                 const DTensor& k_d, const DTensor& v_d, const std::string& prefix,
                                 const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const TraceOptions& topt = pass.options().trace;
  Trace& trace = pass.trace();
  const int64_t H = c.n_heads, dh = c.d_head(), lq = q_d.shape[0], lk = k_d.shape[0];

  RelativeAttentionArgs args;
  args.attn.heads = static_cast<int>(H);
  args.attn.scale = 1.0f / std::sqrt(static_cast<float>(dh));
  args.attn.mask = mask;
  args.attn.want_probs = topt.attention;
  args.attn.want_scores = topt.scores;

  // Shaw tables, shared by the heads of this layer.
  const ShawConfig* shaw = c.shaw();
  if (shaw) {
    const int64_t kd = shaw->max_distance;
    args.rel_k = pass.weight(prefix + ".rel_k");
    args.rel_v = pass.weight(prefix + ".rel_v");
    args.max_distance = kd;
    args.shaw_efficient = shaw->efficient;
    args.want_terms = topt.scores;
    if (topt.masks) {
      Tensor idx({lq, lk});
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) idx.data[i * lk + j] = float(shaw_index(i, j, lq, lk, kd));
      trace.add(prefix + ".shaw.rel_index",
                "clipped relative distance clip(j - i, -k, k) + k indexing a^K, a^V [Lq, Lk]",
                std::move(idx), DType::I32);
    }
  }

  // Adaptive span: z per head (static) or per head and query (dynamic), on the host: a few
  // numbers per query, also needed for the per-layer summaries below.
  const bool span = c.adaptive_span() != nullptr;
  const AdaptiveSpanConfig sc = span ? *c.adaptive_span() : AdaptiveSpanConfig{};
  Mat z;  // [H, Lq]
  if (span) {
    z.resize(H, lq);
    if (sc.dynamic) {
      const Tensor x = be.download(xq_d);
      const Mat sv = be.download(pass.weight(prefix + kSpanV)).mat();              // [H, d]
      const Tensor sb = be.download(pass.weight(prefix + kSpanB));                 // [H]
      const Mat logits = x.mat() * sv.transpose();                                 // [Lq, H]
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < lq; ++i)
          z(h, i) = dynamic_span_z(logits(i, h) + sb.data[size_t(h)], sc.max_span);
      trace.add(span_arrays::dynamic_z(prefix), "dynamic span z_t = S sigmoid(v . x_t + b) [heads, Lq]",
                Tensor::from_mat(z));
    } else {
      const Tensor zs = be.download(pass.weight(prefix + kSpanZ));
      for (int64_t h = 0; h < H; ++h) z.row(h).setConstant(clamp_span_z(zs.data[size_t(h)], sc.max_span));
    }
    args.span_z.assign(z.data(), z.data() + H * lq);
    args.span_ramp = sc.ramp;
    args.span_max = sc.max_span;
    args.span_offset = sc.distance_offset();
    args.span_after = sc.mode == SpanMaskMode::After;
    args.want_span_mask = topt.masks;
  }

  RelativeAttentionResult r = relative_attention(be, q_d, k_d, v_d, args);

  if (topt.attention) pass.trace_later(traced_name, "attention probabilities [heads, Lq, Lk]", r.probs);
  if (topt.scores)
    pass.trace_later(companion_array_name(traced_name, Companion::Scores),
                     std::string("pre-softmax scores ") + (shaw ? "q.(k + a^K)" : "q.k") +
                         "/sqrt(d_head), masked = -inf [heads, Lq, Lk]",
                     r.scores);
  if (args.want_terms) {
    pass.trace_later(prefix + ".shaw.key_term",
                     "Shaw key term q_i . a^K_ij / sqrt(d_head) [heads, Lq, Lk]", r.key_term);
    pass.trace_later(prefix + ".shaw.value_term",
                     "Shaw value term sum_j alpha_ij a^V_ij [heads, Lq, d_head]", r.value_term);
  }
  if (span) {
    if (args.want_span_mask)
      pass.trace_later(span_arrays::mask(prefix), "soft span mask m_z(i - j) per head [heads, Lq, Lk]",
                       r.span_mask);
    std::vector<float> flops_saved(size_t(H), 0.0f), mean_z(size_t(H), 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j)
          if (mask.is_allowed(i, j, lk) &&
              span_mask(z(h, i), span_distance(i, j, lq, lk), sc.ramp, sc.max_span, sc.distance_offset()) == 0.0f)
            flops_saved[size_t(h)] += float(4 * dh);  // q.k and a.v skipped
      mean_z[size_t(h)] = z.row(h).mean();
    }
    append_trace_row(trace, span_arrays::kZ, "span z per self-attention layer and head (dynamic: mean over positions) [layers, heads]",
                     mean_z, {H});
    std::vector<float> curve(size_t(H * lk));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t x = 0; x < lk; ++x)
        curve[size_t(h * lk + x)] = span_mask(mean_z[size_t(h)], x, sc.ramp, sc.max_span, sc.distance_offset());
    append_trace_row(trace, span_arrays::kMaskCurve, "mask curve m_z(x) for distance x = 0..Lk-1 [layers, heads, Lk]",
                     curve, {H, lk});
    append_trace_row(trace, span_arrays::kFlopsSaved,
                     "FLOPs a head saves by skipping keys with m_z = 0 (4 d_head per skipped pair) [layers, heads]",
                     flops_saved, {H});
    append_trace_row(trace, span_arrays::kPenalty, "L1 span penalty loss_coeff * sum_h z_h per layer [layers]",
                     {span_l1_penalty(sc.loss_coeff, mean_z.data(), H)}, {});
  }
  return r.out;
}

}  // namespace atlas
