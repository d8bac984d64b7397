#pragma once
// Config of Shaw relative positions, a part of softmax attention (core/config/attention_kind.h)
// held by ModelConfig; the "shaw" section, read, written and validated by
// core/variants/shaw/shaw_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// Shaw et al. relation-aware self-attention (seed 001 eqs. 2-5): per layer, tables a^K, a^V
// [2k+1, d_head] shared across heads, indexed by the clipped distance clip(j - i, -k, k) + k.
struct ShawConfig {
  int64_t max_distance = 20;  // k; tensor2tensor's transformer_relative default
  bool efficient = true;      // seed 001 eq. 5: q.a^K per distance once, then gather
};

}  // namespace atlas
