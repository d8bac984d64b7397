#pragma once
// Host references of the Transformer-XL attention and ACT step ops (core/backend/backend.h): what the
// CPU backend runs, what a backend without a kernel falls back to, and what every device
// kernel is tested against. Shapes are checked here, with messages naming the op.
#include "core/backend/backend.h"
#include "core/tensor/tensor.h"

namespace atlas {

struct XlAttentionHost {
  Tensor out, probs, scores, term_a, term_b, term_c, term_d;  // as XlAttentionResult (all filled)
};
XlAttentionHost xl_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& rk, const Tensor& u, const Tensor& vb,
                                       const XlAttentionArgs& args);

struct ActStepHost {
  Tensor halting, y, state, weights;  // as ActStepResult
};
ActStepHost act_step_reference(const Tensor& halting, const Tensor& y, const Tensor& state,
                               const Tensor& logit, const Tensor& step_out, const ActStepArgs& args);

// Shape checks shared with device implementations; throw AtlasError naming the mismatch.
void check_xl_attention_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& rk,
                               const Shape& u, const Shape& vb, const XlAttentionArgs& args);
void check_act_step_shapes(const Shape& halting, const Shape& y, const Shape& state,
                           const Shape& logit, const Shape& step_out);

}  // namespace atlas
