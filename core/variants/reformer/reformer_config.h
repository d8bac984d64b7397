#pragma once
// Config of Reformer, held by ModelConfig: LSH attention, an attention kind
// (core/config/attention_kind.h), and the reversible residual stack, a stack kind
// (core/config/stack_kind.h). Both are read from the "lsh" section by
// core/variants/reformer/reformer_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// Reformer (seeds 000, 003; google/trax efficient_attention.py): LSH attention over shared-QK
// keys, in place of dense self-attention. Read from the "lsh" object, as is the reversible
// stack below.
struct LshConfig {
  int64_t n_rounds = 1;       // hash rounds (trax n_hashes default 1)
  int64_t n_buckets = 0;      // even >= 2, or 1 = no hashing; 0 = auto: 2 max(1, L / chunk)
  int64_t chunk_length = 128; // queries per chunk (trax default)
  uint64_t seed = 0;          // random rotations, fixed per layer / head / round
};

// Reformer's reversible residual stack: Y1 = X1 + Attn(X2), Y2 = X2 + FF(Y1), exit
// mean(Y1, Y2), with or without LSH attention. Chosen by the "lsh" object's "reversible": true.
struct ReversibleConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "reversible";
  static constexpr const char* kStackKindKey = "lsh.reversible";
  int64_t ff_chunks = 1;  // feed-forward applied to this many row chunks (same output)
};

}  // namespace atlas
