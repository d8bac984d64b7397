#pragma once
// Config of Performer, an attention kind (core/config/attention_kind.h) held by ModelConfig; the
// "performer" section, read, written and validated by core/variants/performer/performer_config.cpp
// (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// Performer FAVOR+ (seed 003; google-research performer/fast_attention): softmax attention
// approximated by positive orthogonal random features.
struct PerformerConfig {
  int64_t features = 256;  // m (google-research default)
  uint64_t seed = 0;       // the random features are fixed by (seed, layer, head)
};

}  // namespace atlas
