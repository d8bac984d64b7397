#pragma once
// Config of the adaptive attention span, a part of softmax attention
// (core/config/attention_kind.h) held by ModelConfig; the "adaptive_span" section, read, written
// and validated by core/variants/adaptive_span/adaptive_span_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

enum class SpanMaskMode { Inside, After };
// The distance the ramp is measured in (core/variants/adaptive_span/span_mask.h): the paper's
// m_z(i - j), or the reference code's, whose ramp ends one step farther (m_z(i - j - 1)).
enum class SpanDistance { Paper, Reference };

// Adaptive attention span (Sukhbaatar et al., seed 000): soft mask
// m_z(x) = clamp((R + z - x) / R, 0, 1) over the query-key distance x, per head z in [0, S].
struct AdaptiveSpanConfig {
  int64_t max_span = 8192;  // S (enwik8)
  int64_t ramp = 32;        // R
  float init_z = 0.0f;      // z at initialisation, in [0, S] (the reference starts at 0)
  SpanMaskMode mode = SpanMaskMode::Inside;  // paper: inside the softmax; after = reference
  SpanDistance distance = SpanDistance::Paper;
  bool dynamic = false;     // z_t = S sigmoid(v . x_t + b) per head and position
  float loss_coeff = 2e-6f;  // L1 penalty coefficient (reference enwik8 setting)
  // The o of m_z(x - o): 0 (paper) or 1 (reference).
  int64_t distance_offset() const { return distance == SpanDistance::Reference ? 1 : 0; }
};

}  // namespace atlas
