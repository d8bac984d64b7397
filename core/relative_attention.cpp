// Host attention for self-attention heads modified by the issue 3 variants (variants_i.h):
// Shaw relative positions (shaw.cpp) and adaptive span (adaptive_span.cpp), alone or together.
// Per head h, with scale 1/sqrt(d_head):
//   e_ij = (q_i . k_j + [shaw] q_i . a^K_ij) * scale,  -inf where the hard mask forbids j
//   a_ij = softmax_j(e_ij + [span, inside] log m_z(x_ij))   or, mode after (reference):
//   a_ij = p_ij m_ij / (sum_r p_ir m_ir + 1e-8),  p = softmax(e)
//   o_i  = sum_j a_ij (v_j + [shaw] a^V_ij)
#include <cmath>
#include <algorithm>
#include <limits>

#include "error.h"
#include "forward_pass.h"
#include "gtrxl.h"
#include "transformer_xl.h"
#include "universal.h"
#include "variants_i.h"

namespace atlas {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_self_attention(const std::string& prefix) {
  return ends_with(prefix, ".attn") || ends_with(prefix, ".self_attn");
}

Mat head_block(const Tensor& t, int64_t h, int64_t dh) {
  return t.mat().block(0, h * dh, t.shape[0], dh);
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

void append_variant_i_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  if (c.universal.enabled) append_universal_specs(specs, c);  // shared block (universal.cpp)
  if (c.xl.enabled) append_xl_specs(specs, c);  // u, v, W_kR (transformer_xl.cpp)
  if (c.xl.enabled && c.gating.enabled) append_gtrxl_specs(specs, c);  // GTrXL gates (gtrxl.cpp)
  if (!c.shaw.enabled && !c.adaptive_span.enabled) return;
  auto add_for = [&](const std::string& p) {
    if (c.shaw.enabled) {
      const int64_t rows = 2 * c.shaw.max_distance + 1;
      specs.push_back({p + ".rel_k", {rows, c.d_head()}});
      specs.push_back({p + ".rel_v", {rows, c.d_head()}});
    }
    if (c.adaptive_span.enabled) {
      if (c.adaptive_span.dynamic) {
        specs.push_back({p + ".span_v", {c.n_heads, c.d_model}});
        specs.push_back({p + ".span_b", {c.n_heads}, InitKind::Zeros});
      } else {
        specs.push_back({p + ".span_z", {c.n_heads}, InitKind::Constant, c.adaptive_span.init_z});
      }
    }
  };
  if (c.has_encoder())
    for (int64_t i = 0; i < c.n_layers; ++i) add_for("encoder.layer" + std::to_string(i) + ".attn");
  if (c.has_decoder())
    for (int64_t i = 0; i < c.decoder_layers(); ++i)
      add_for("decoder.layer" + std::to_string(i) + ".self_attn");
}

bool variant_i_attention_applies(const ModelConfig& c, const std::string& prefix) {
  return (c.shaw.enabled || c.adaptive_span.enabled) && is_self_attention(prefix);
}

DTensor variant_i_attention(ForwardPass& pass, const DTensor& xq_d, const DTensor& q_d,
                            const DTensor& k_d, const DTensor& v_d, const std::string& prefix,
                            const std::string& traced_name, const AttentionMask& mask) {
  const ModelConfig& c = pass.config();
  Backend& be = pass.backend();
  const TraceOptions& topt = pass.options().trace;
  Trace& trace = pass.trace();
  const Tensor q = be.download(q_d), k = be.download(k_d), v = be.download(v_d);
  const int64_t H = c.n_heads, dh = c.d_head(), lq = q.shape[0], lk = k.shape[0];
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const float ninf = -std::numeric_limits<float>::infinity();

  // Shaw tables, shared by the heads of this layer.
  const bool shaw = c.shaw.enabled;
  const int64_t kd = c.shaw.max_distance;
  Mat ak, av;
  if (shaw) {
    ak = be.download(pass.weight(prefix + ".rel_k")).mat();
    av = be.download(pass.weight(prefix + ".rel_v")).mat();
    if (topt.masks) {
      Tensor idx({lq, lk});
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lk; ++j) idx.data[i * lk + j] = float(shaw_index(i, j, lq, lk, kd));
      trace.add(prefix + ".shaw.rel_index",
                "clipped relative distance clip(j - i, -k, k) + k indexing a^K, a^V [Lq, Lk]",
                std::move(idx), DType::I32);
    }
  }

  // Adaptive span: z per head (static) or per head and query (dynamic).
  const AdaptiveSpanConfig& sc = c.adaptive_span;
  const bool span = sc.enabled;
  Mat z;  // [H, Lq]
  if (span) {
    z.resize(H, lq);
    if (sc.dynamic) {
      const Tensor x = be.download(xq_d);
      const Mat sv = be.download(pass.weight(prefix + ".span_v")).mat();           // [H, d]
      const Tensor sb = be.download(pass.weight(prefix + ".span_b"));              // [H]
      const Mat logits = x.mat() * sv.transpose();                                 // [Lq, H]
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < lq; ++i)
          z(h, i) = float(sc.max_span) * sigmoid(logits(i, h) + sb.data[size_t(h)]);
      trace.add(prefix + ".span.dynamic_z", "dynamic span z_t = S sigmoid(v . x_t + b) [heads, Lq]",
                Tensor::from_mat(z));
    } else {
      const Tensor zs = be.download(pass.weight(prefix + ".span_z"));
      for (int64_t h = 0; h < H; ++h) z.row(h).setConstant(std::clamp(zs.data[size_t(h)], 0.0f, float(sc.max_span)));
    }
  }

  Tensor out({lq, H * dh});
  Tensor probs_t({H, lq, lk}), scores_t({H, lq, lk}), key_term_t, value_term_t, span_mask_t;
  const bool want_terms = shaw && topt.scores;
  if (want_terms) {
    key_term_t = Tensor({H, lq, lk});
    value_term_t = Tensor({H, lq, dh});
  }
  if (span && topt.masks) span_mask_t = Tensor({H, lq, lk});
  std::vector<float> flops_saved(size_t(H), 0.0f), mean_z(size_t(H), 0.0f);

  for (int64_t h = 0; h < H; ++h) {
    const Mat qh = head_block(q, h, dh), kh = head_block(k, h, dh), vh = head_block(v, h, dh);
    Mat e = qh * kh.transpose();  // [Lq, Lk]
    if (shaw) {
      Mat kt = shaw_key_term(qh, ak, lk, kd, c.shaw.efficient);
      if (want_terms) Eigen::Map<Mat>(key_term_t.data.data() + h * lq * lk, lq, lk) = kt * scale;
      e += kt;
    }
    e *= scale;
    Mat m = Mat::Ones(lq, lk);  // soft span mask
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j) {
        if (!mask.is_allowed(i, j, lk)) {
          e(i, j) = ninf;
          m(i, j) = 0.0f;
          continue;
        }
        if (span) {
          m(i, j) = span_mask(z(h, i), span_distance(i, j, lq, lk), sc.ramp, sc.max_span);
          if (m(i, j) == 0.0f) flops_saved[size_t(h)] += float(4 * dh);  // q.k and a.v skipped
        }
      }
    Mat a = Mat::Zero(lq, lk);
    for (int64_t i = 0; i < lq; ++i) {
      float mx = ninf;
      for (int64_t j = 0; j < lk; ++j)
        if (m(i, j) > 0.0f || (!span && e(i, j) != ninf)) mx = std::max(mx, e(i, j));
      if (span && sc.mode == SpanMaskMode::After) {
        // Reference: plain softmax over the allowed keys, then mask and renormalise.
        float mx_all = ninf;
        for (int64_t j = 0; j < lk; ++j) mx_all = std::max(mx_all, e(i, j));
        if (mx_all == ninf) continue;
        double zsum = 0, msum = 0;
        for (int64_t j = 0; j < lk; ++j) zsum += e(i, j) == ninf ? 0.0 : std::exp(double(e(i, j) - mx_all));
        for (int64_t j = 0; j < lk; ++j) {
          double p = e(i, j) == ninf ? 0.0 : std::exp(double(e(i, j) - mx_all)) / zsum;
          a(i, j) = float(p * m(i, j));
          msum += p * m(i, j);
        }
        a.row(i) /= float(msum + 1e-8);
        continue;
      }
      if (mx == ninf) continue;  // no key at all: a zero row, not NaN
      double zsum = 0;
      for (int64_t j = 0; j < lk; ++j)
        if (e(i, j) != ninf && m(i, j) > 0.0f) {
          a(i, j) = float(double(m(i, j)) * std::exp(double(e(i, j) - mx)));
          zsum += a(i, j);
        }
      a.row(i) /= float(zsum);
    }
    Mat oh = a * vh;
    if (shaw) {
      Mat vt = shaw_value_term(a, av, kd, c.shaw.efficient);
      if (want_terms) Eigen::Map<Mat>(value_term_t.data.data() + h * lq * dh, lq, dh) = vt;
      oh += vt;
    }
    out.mat().block(0, h * dh, lq, dh) = oh;
    Eigen::Map<Mat>(probs_t.data.data() + h * lq * lk, lq, lk) = a;
    Eigen::Map<Mat>(scores_t.data.data() + h * lq * lk, lq, lk) = e;
    if (span_mask_t.numel()) Eigen::Map<Mat>(span_mask_t.data.data() + h * lq * lk, lq, lk) = m;
    if (span) mean_z[size_t(h)] = z.row(h).mean();
  }

  if (topt.attention) trace.add(traced_name, "attention probabilities [heads, Lq, Lk]", std::move(probs_t));
  if (topt.scores)
    trace.add(traced_name + ".scores",
              std::string("pre-softmax scores ") + (shaw ? "q.(k + a^K)" : "q.k") +
                  "/sqrt(d_head), masked = -inf [heads, Lq, Lk]",
              std::move(scores_t));
  if (want_terms) {
    trace.add(prefix + ".shaw.key_term", "Shaw key term q_i . a^K_ij / sqrt(d_head) [heads, Lq, Lk]",
              std::move(key_term_t));
    trace.add(prefix + ".shaw.value_term", "Shaw value term sum_j alpha_ij a^V_ij [heads, Lq, d_head]",
              std::move(value_term_t));
  }
  if (span) {
    if (span_mask_t.numel())
      trace.add(prefix + ".span.mask", "soft span mask m_z(i - j) per head [heads, Lq, Lk]",
                std::move(span_mask_t));
    append_trace_row(trace, "span.z", "span z per self-attention layer and head (dynamic: mean over positions) [layers, heads]",
                     mean_z, {H});
    std::vector<float> curve(size_t(H * lk));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t x = 0; x < lk; ++x)
        curve[size_t(h * lk + x)] = span_mask(mean_z[size_t(h)], x, sc.ramp, sc.max_span);
    append_trace_row(trace, "span.mask_curve", "mask curve m_z(x) for distance x = 0..Lk-1 [layers, heads, Lk]",
                     curve, {H, lk});
    append_trace_row(trace, "span.flops_saved",
                     "FLOPs a head saves by skipping keys with m_z = 0 (4 d_head per skipped pair) [layers, heads]",
                     flops_saved, {H});
    float sum_z = 0;
    for (float zz : mean_z) sum_z += zz;
    append_trace_row(trace, "span.penalty", "L1 span penalty loss_coeff * sum_h z_h per layer [layers]",
                     {sc.loss_coeff * sum_z}, {});
  }
  return be.upload(out);
}

}  // namespace atlas
