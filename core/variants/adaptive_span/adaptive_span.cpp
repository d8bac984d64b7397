// Adaptive attention span, Sukhbaatar et al. 2019 (seed 000, "Adaptive Attention Span";
// REFERENCES.md for facebookresearch/adaptive-span):
//   m_z(x) = clamp((R + z - x) / R, 0, 1)      (adaptive_span.distance "reference": x - 1)
//   a_ij   = m_z(i - j) exp(s_ij) / sum_r m_z(i - r) exp(s_ir)      (mask inside the softmax)
//   dynamic span: z_t = S sigmoid(v . x_t + b)
// The reference applies the mask after the softmax and renormalises,
// a * m / (sum(a * m) + 1e-8), equal up to that epsilon; both are offered
// (adaptive_span.mode). Keys farther than S are outside the window; keys farther than z + R
// get weight 0, so a head could skip them: that saving is what span.flops_saved reports.
#include <algorithm>
#include <cstdlib>

#include "core/variants/adaptive_span/adaptive_span.h"
#include "core/variants/adaptive_span/span_mask.h"

namespace atlas {

float span_mask(float z, int64_t x, int64_t ramp, int64_t max_span, int64_t offset) {
  return span_mask_at(z, x, ramp, max_span, offset);
}

}  // namespace atlas
