#pragma once
// TransformerLens's ln*.hook_scale for Atlas's norms: the per-row divisor each norm applies,
// computed from the norm's input, and the norm's output recomputed for the rows whose divisor a
// hook replaced (the others keep the engine's values bit for bit).
//   LayerNorm  y = (x - mean) / s * gamma + beta,  s = sqrt(var + eps)   (TL's scale)
//   RMSNorm    y = x / s * gamma,                  s = sqrt(mean x^2 + eps)
//   ScaleNorm  y = g * x / s,                      s = max(|x|, eps)
#include <string>

#include "core/model/model.h"

namespace atlas::python {

// x [L, d] -> [L, 1], in double rounded to float.
Tensor norm_scale(const ModelConfig& c, const Tensor& x);
// Rewrites the rows i of y [L, d] where scale [L, 1] differs from old_scale, from x [L, d] and
// the norm `prefix`'s parameters.
void renormalize_rows(const Model& model, const std::string& prefix, const Tensor& x, const Tensor& old_scale,
                      const Tensor& scale, Tensor& y);

}  // namespace atlas::python
