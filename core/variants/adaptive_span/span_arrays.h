#pragma once
// The trace arrays of the adaptive attention span (docs/variants.md, "Adaptive attention
// span"), named once for the producer (relative_attention.cpp) and every reader (the span
// panel, the pattern view, tests).
#include <string>

namespace atlas::span_arrays {

inline constexpr const char* kZ = "span.z";                     // [layers, heads]
inline constexpr const char* kMaskCurve = "span.mask_curve";    // m_z(x) [layers, heads, Lk]
inline constexpr const char* kFlopsSaved = "span.flops_saved";  // [layers, heads]
inline constexpr const char* kPenalty = "span.penalty";         // [layers]
// Per attention map `attn`: the dynamic span z_t [heads, Lq] and the soft mask [heads, Lq, Lk].
inline constexpr const char* kDynamicZSuffix = ".span.dynamic_z";
inline constexpr const char* kMaskSuffix = ".span.mask";
inline std::string dynamic_z(const std::string& attn) { return attn + kDynamicZSuffix; }
inline std::string mask(const std::string& attn) { return attn + kMaskSuffix; }

}  // namespace atlas::span_arrays
