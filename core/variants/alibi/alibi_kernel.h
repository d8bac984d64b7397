#pragma once
// ALiBi's kernel (core/model/attention_kernel.h): on the backend the alibi_attention module op
// (alibi_attention.cpp), on the tape the tape's attention with the biases (train_alibi.h); the
// mechanism's entry is mechanism.cpp. Self-attention only: cross-attention has no distances.
#include "core/model/attention_kernel.h"
#include "core/train/train_model.h"
#include "core/variants/alibi/alibi_attention.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/alibi/train_alibi.h"

namespace atlas {

inline DTensor alibi_backend_kernel(const BackendKernelCall& a) {
  return alibi_attention_layer(a.pass, a.q, a.k, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int alibi_tape_kernel(const TapeKernelCall<S>& a) {
  const AlibiConfig* alibi = alibi_of(a.config);
  return train::alibi_attention(a.tape, a.q, a.k, a.v, a.spec,
                                alibi_slopes(a.config.n_heads,
                                             alibi ? alibi->bias_max : AlibiConfig{}.bias_max));
}

inline constexpr AttentionKernel kAlibiKernel{
    .backend = alibi_backend_kernel,
    .tape_float = alibi_tape_kernel<float>,
    .tape_double = alibi_tape_kernel<double>,
};

}  // namespace atlas
