#pragma once
// Host reference of the Transformer-XL attention op (core/backend/backend.h): what the
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

// Shape check shared with device implementations; throws AtlasError naming the mismatch.
void check_xl_attention_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& rk,
                               const Shape& u, const Shape& vb, const XlAttentionArgs& args);

}  // namespace atlas
