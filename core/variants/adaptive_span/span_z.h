#pragma once
// The adaptive span's z (Sukhbaatar et al. 2019, seed 000), one formula each for the inference
// forward (core/variants/relative_attention/relative_attention.cpp), the training tape
// (train_span.h) and the training loop's hooks (train_hooks.cpp):
//   learned span:  z_h in [0, S], clamped when read and after every optimiser step (the
//                  reference clamps the parameter outside the graph);
//   dynamic span:  z_t = S sigmoid(v . x_t + b), per head and position;
//   L1 penalty:    loss_coeff * sum over heads of z_h (dynamic: the mean over positions).
// The parameters of a self-attention sub-layer `prefix` are prefix + kSpanZ (learned) or
// prefix + kSpanV, kSpanB (dynamic) (relative_attention.cpp declares them).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/tensor/sigmoid.h"

namespace atlas {

inline constexpr const char* kSpanZ = ".span_z";  // [H] the learned span per head
inline constexpr const char* kSpanV = ".span_v";  // [H, d] the dynamic span's v per head
inline constexpr const char* kSpanB = ".span_b";  // [H] the dynamic span's b per head

inline bool is_span_z_param(const std::string& name) { return name.ends_with(kSpanZ); }

template <class S>
S clamp_span_z(S z, int64_t max_span) {
  return std::clamp(z, S(0), S(max_span));
}

// z_t of one head and position from its logit v . x_t + b.
template <class S>
S dynamic_span_z(S logit, int64_t max_span) {
  return S(max_span) * logistic(logit);
}

// The penalty of one or more layers from the spans of their heads, summed in A in the order
// given: loss_coeff * (z_1 + ... + z_n).
template <class A>
A span_l1_penalty(A loss_coeff, const A* head_spans, int64_t n) {
  A sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += head_spans[i];
  return loss_coeff * sum;
}

}  // namespace atlas
