#pragma once
// The trace arrays of Adaptive Computation Time (docs/variants.md, "Universal Transformer with
// ACT"), named once for the producer (universal.cpp) and every reader (the ACT panel, tests).
// The per-step attention maps are in the attention-map catalogue (AttentionMap::step).
namespace atlas::act_arrays {

inline constexpr const char* kHalting = "act.halting";      // h per step and position [steps, L]
inline constexpr const char* kWeights = "act.weights";      // update weight p [steps, L]
inline constexpr const char* kSteps = "act.steps";          // N(t) [L]
inline constexpr const char* kRemainder = "act.remainder";  // R(t) [L]
inline constexpr const char* kPonder = "act.ponder";        // N(t) + R(t) [L]

}  // namespace atlas::act_arrays
