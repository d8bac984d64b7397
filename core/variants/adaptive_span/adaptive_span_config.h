#pragma once
// Config of Shaw relative positions, adaptive span, Transformer-XL, GTrXL gating and the Universal Transformer (docs/variants.md), held by ModelConfig. Parsed, written
// and validated by core/variants/adaptive_span/adaptive_span_config.cpp as nested objects ("shaw", "adaptive_span").
#include <cstdint>
#include <optional>

namespace atlas {

// Shaw et al. relation-aware self-attention (seed 001 eqs. 2-5): per layer, tables a^K, a^V
// [2k+1, d_head] shared across heads, indexed by the clipped distance clip(j - i, -k, k) + k.
struct ShawConfig {
  int64_t max_distance = 20;  // k; tensor2tensor's transformer_relative default
  bool efficient = true;      // seed 001 eq. 5: q.a^K per distance once, then gather
};

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

// GTrXL (Parisotto et al. 2019; seeds 000, 001): on top of Transformer-XL, layer norm on the
// sub-layer input only with a ReLU on the sub-layer output (identity-map reordering, TrXL-I),
// and the residual x + y of both sub-layers replaced by a gate g(x, y) (core/variants/gtrxl/gtrxl.cpp).
enum class GateType { None, Input, Output, Highway, Gru };

struct GatingConfig {
  GateType type = GateType::Gru;     // none = plain residual x + y (TrXL-I with the reordering)
  float bias_init = 2.0f;            // b_g at initialisation (output, highway, GRU); paper: 2
  bool identity_map_reorder = true;  // TrXL-I: needs norm_position "pre"; adds the ReLU
};

// Transformer-XL (Dai et al., seeds 000/001/003; REFERENCES.md): segment recurrence with
// per-layer memory of the previous segment's layer inputs, and relative positions with u, v,
// W_kR. Decoder-only, no absolute positions (core/variants/transformer_xl/transformer_xl.cpp).
// A stack kind (core/config/stack_kind.h).
struct XLConfig {
  int64_t segment_length = 150;  // tgt_len
  int64_t mem_len = 150;         // memory rows kept per layer (0: segments are independent)
  int64_t clamp_len = -1;        // clamp relative distances to this; <= 0 = no clamp (reference)
  bool same_length = false;      // every query sees the last mem_len keys (reference mask)
  // GTrXL: the blocks' residuals gated (the config's "gating" section); none = Transformer-XL.
  std::optional<GatingConfig> gating;
};

}  // namespace atlas

namespace atlas {

enum class ActUpdate { Interpolate, WeightedSum };

// Universal Transformer (Dehghani et al., seed 000): one shared block applied recurrently with
// a position + time signal, optionally halted per position by ACT (Graves 2016). A stack kind
// (core/config/stack_kind.h).
struct UniversalConfig {
  bool act = true;           // false: fixed number of steps (max_steps)
  int64_t max_steps = 8;     // M (tensor2tensor: 2 x num_hidden_layers)
  float epsilon = 0.01f;     // halting threshold 1 - eps
  ActUpdate update = ActUpdate::Interpolate;  // tensor2tensor; weighted_sum = Graves
  float halting_bias_init = 1.0f;             // tensor2tensor act_halting_bias_init
};

}  // namespace atlas
