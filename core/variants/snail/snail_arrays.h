#pragma once
// The trace arrays of a SNAIL run (docs/variants.md, "SNAIL"), named once for the producer
// (snail.cpp) and every reader (the SNAIL explorer, `atlas snail`, tests).
#include <cstdint>
#include <string>

namespace atlas::snail_arrays {

// Block b's causal attention [L, L] (also in the attention-map catalogue).
inline std::string attention(int64_t block) { return "snail.attn" + std::to_string(block); }

inline constexpr const char* kReceptiveField = "snail.receptive_field";  // 1 where j reaches i [L, L]
inline constexpr const char* kOutput = "snail.output";                   // final features [L, channels]

}  // namespace atlas::snail_arrays
