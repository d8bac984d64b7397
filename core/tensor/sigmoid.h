#pragma once
// The logistic function of the variants' scalar gates (adaptive span's dynamic span, the NTM
// controller's gates, SNAIL's gated activations, local-p alignment), written once.
#include <cmath>

namespace atlas {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace atlas
