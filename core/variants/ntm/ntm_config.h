#pragma once
// Config of the Neural Turing Machine (seed 004), a stack kind (core/config/stack_kind.h) held by
// ModelConfig; the "ntm" section, read, written and validated by
// core/variants/ntm/ntm_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// A Neural Turing Machine with a seeded feed-forward controller (core/variants/ntm/ntm_model.cpp) that
// replaces the Transformer stack of a "decoder" model: each token is one time step.
struct NtmConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "ntm";
  static constexpr const char* kStackKindKey = "ntm.enabled";
  int64_t memory_slots = 16;     // N
  int64_t memory_width = 8;      // M
  int64_t controller_size = 32;  // hidden units of the controller
  int64_t read_heads = 1;
  int64_t write_heads = 1;
  int64_t shift_range = 1;       // R: shifts -R..R (Graves 2014 used -1, 0, +1)
};

}  // namespace atlas
