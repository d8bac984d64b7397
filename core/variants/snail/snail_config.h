#pragma once
// Config of SNAIL (seed 004), a stack kind (core/config/stack_kind.h) held by
// ModelConfig; the "snail" section, read, written and validated by
// core/variants/snail/snail_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// SNAIL (Mishra et al. 2018, core/variants/snail/snail.h): causal dilated temporal-convolution blocks
// interleaved with causal attention blocks over the token embeddings (d_model channels), then
// a linear output head to the vocabulary. Replaces the Transformer of a "decoder" model.
struct SnailConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "snail";
  static constexpr const char* kStackKindKey = "snail.enabled";
  int64_t length = 64;      // T: each TC block has ceil(log2 T) dense blocks; longer inputs refused
  int64_t filters = 8;      // D of every dense block
  int64_t key_size = 16;    // K of every attention block
  int64_t value_size = 8;   // V of every attention block
  int64_t tc_blocks = 2;    // Attn, TC, Attn, ..., Attn
  bool paper_dilations = false;  // 2, 4, ..., 2^n (the paper's pseudo-code) instead of 1, 2, ...
};

}  // namespace atlas
