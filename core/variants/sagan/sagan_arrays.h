#pragma once
// The trace arrays of a SAGAN run (docs/variants.md, "SAGAN"), named once for the producer
// (sagan.cpp) and every reader (the SAGAN overlay, `atlas sagan`, tests).
namespace atlas::sagan_arrays {

inline constexpr const char* kImage = "sagan.image";        // input resized, RGB in [0, 1] [H, W, 3]
inline constexpr const char* kFeatures = "sagan.features";  // stem features [C, H, W]
inline constexpr const char* kAttention = "sagan.attention";  // beta per query location [1, HW, HW keys]

}  // namespace atlas::sagan_arrays
