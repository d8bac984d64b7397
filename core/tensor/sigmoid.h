#pragma once
// The logistic function of the variants' scalar gates (adaptive span's dynamic span, the NTM
// controller's gates, SNAIL's gated activations, local-p alignment), written once: `logistic`
// in any scalar (the training tape's double too), `sigmoid` the engine's float.
#include <cmath>

namespace atlas {

template <class S>
S logistic(S x) {
  return S(1) / (S(1) + std::exp(-x));
}

inline float sigmoid(float x) { return logistic(x); }

}  // namespace atlas
