#pragma once
// Shaw's relations and the adaptive span as one kernel (core/model/attention_kernel.h): the two
// act in the same softmax sub-layer and combine at inference (relative_attention.cpp, the module
// op `relative_attention`); on the tape, whichever the config has (train_relative.h). Both
// mechanisms' entries (core/variants/shaw/mechanism.cpp, adaptive_span/mechanism.cpp) point to
// it, so a config with both runs it once.
#include "core/model/attention_kernel.h"
#include "core/variants/relative_attention/relative_attention.h"
#include "core/variants/relative_attention/train_relative.h"

namespace atlas {

inline DTensor relative_backend_kernel(const BackendKernelCall& a) {
  return relative_attention_layer(a.pass, a.xq, a.q, a.k, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int relative_tape_kernel(const TapeKernelCall<S>& a) {
  return train::tape_relative_attention(a.tape, a.config, a.prefix, a.xq, a.q, a.k, a.v, a.spec,
                                        a.weight, a.record);
}

inline constexpr AttentionKernel kRelativeAttentionKernel{
    .backend = relative_backend_kernel,
    .tape_float = relative_tape_kernel<float>,
    .tape_double = relative_tape_kernel<double>,
};

}  // namespace atlas
