#pragma once
// Hooks of Shaw relative positions and adaptive span into the shared forward (forward_pass.cpp,
// params.cpp). Shaw relative positions (core/variants/shaw/shaw.cpp) and adaptive attention span
// (core/variants/adaptive_span/adaptive_span.cpp) change the scores and weights of a self-attention
// head, which the plain attention op cannot express: such heads go through the relative_attention
// module op (relative_attention_op.h).
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/params.h"
#include "core/model/trace.h"
#include "core/tensor/tensor.h"
#include "core/variants/adaptive_span/span_mask.h"
#include "core/variants/relative_attention/relative_attention_op.h"

namespace atlas {

class ForwardPass;

// Appends the variant tensors (Shaw tables, span parameters) of every self-attention layer.
void append_relative_attention_specs(std::vector<ParamSpec>& specs, const ModelConfig& c);

// Attention of all heads through the relative_attention op: xq [Lq, d] (the sub-layer input, for
// the dynamic span), q [Lq, H*dh], k, v [Lk, H*dh] -> concatenated heads [Lq, H*dh] (before W^O).
// Traces `traced_name` (probabilities, scores) and the variant arrays.
DTensor relative_attention_layer(ForwardPass& pass, const DTensor& xq, const DTensor& q,
                                 const DTensor& k, const DTensor& v, const std::string& prefix,
                                 const std::string& traced_name, const AttentionMask& mask);

// ---- Shaw (core/variants/shaw/shaw.cpp) ----
// clip(j - i, -k, k) + k, with query i at key position i + (lk - lq) when keys include a prefix.
int64_t shaw_index(int64_t i, int64_t j, int64_t lq, int64_t lk, int64_t k);
// Key term q_i . a^K_ij for one head: qh [Lq, dh], ak [2k+1, dh] -> [Lq, Lk] (unscaled).
// efficient = seed 001 eq. 5: q . a^K_r once per distance r, then a gather.
Mat shaw_key_term(const Mat& qh, const Mat& ak, int64_t lk, int64_t k, bool efficient);
// Value term sum_j alpha_ij a^V_ij: probs [Lq, Lk], av [2k+1, dv] -> [Lq, dv].
Mat shaw_value_term(const Mat& probs, const Mat& av, int64_t k, bool efficient);

// ---- adaptive span (core/variants/adaptive_span/adaptive_span.cpp) ----
// m_z(x - o) = clamp((R + z - x + o) / R, 0, 1); 0 beyond the maximum span S
// (core/variants/adaptive_span/span_mask.h; o = AdaptiveSpanConfig::distance_offset()).
float span_mask(float z, int64_t x, int64_t ramp, int64_t max_span, int64_t offset = 0);
// Appends one row to a stacked summary array (e.g. span.z [layers, heads]), creating it.
void append_trace_row(Trace& trace, const std::string& name, const std::string& meaning,
                      const std::vector<float>& row, Shape row_shape);

}  // namespace atlas
