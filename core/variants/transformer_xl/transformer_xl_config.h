#pragma once
// Config of Transformer-XL, a stack kind (core/config/stack_kind.h) held by ModelConfig; the "xl"
// section, read, written and validated by core/variants/transformer_xl/transformer_xl_config.cpp
// (keys in docs/variants.md). Its optional gates are GTrXL's (core/variants/gtrxl/gtrxl_config.h).
#include <cstdint>
#include <optional>

#include "core/variants/gtrxl/gtrxl_config.h"

namespace atlas {

// Transformer-XL (Dai et al., seeds 000/001/003; REFERENCES.md): segment recurrence with
// per-layer memory of the previous segment's layer inputs, and relative positions with u, v,
// W_kR. Decoder-only, no absolute positions (core/variants/transformer_xl/transformer_xl.cpp).
struct XLConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "xl";
  static constexpr const char* kStackKindKey = "xl.enabled";
  int64_t segment_length = 150;  // tgt_len
  int64_t mem_len = 150;         // memory rows kept per layer (0: segments are independent)
  int64_t clamp_len = -1;        // clamp relative distances to this; <= 0 = no clamp (reference)
  bool same_length = false;      // every query sees the last mem_len keys (reference mask)
  // GTrXL: the blocks' residuals gated (the config's "gating" section); none = Transformer-XL.
  std::optional<GatingConfig> gating;
};

}  // namespace atlas
