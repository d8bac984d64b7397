#pragma once
// Config of the Universal Transformer, a stack kind (core/config/stack_kind.h) held by
// ModelConfig; the "universal" section, read, written and validated by
// core/variants/universal/universal_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

enum class ActUpdate { Interpolate, WeightedSum };

// Universal Transformer (Dehghani et al., seed 000): one shared block applied recurrently with
// a position + time signal, optionally halted per position by ACT (Graves 2016).
struct UniversalConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "universal";
  static constexpr const char* kStackKindKey = "universal.enabled";
  bool act = true;           // false: fixed number of steps (max_steps)
  int64_t max_steps = 8;     // M (tensor2tensor: 2 x num_hidden_layers)
  float epsilon = 0.01f;     // halting threshold 1 - eps
  ActUpdate update = ActUpdate::Interpolate;  // tensor2tensor; weighted_sum = Graves
  float halting_bias_init = 1.0f;             // tensor2tensor act_halting_bias_init
};

}  // namespace atlas
