#pragma once
// What the attention sub-layers of a model compute: softmax attention (with Shaw's relative
// positions and/or an adaptive span, or neither), or one of the mechanisms that replace its
// pattern or scores: a sparse pattern, Reformer's LSH, Performer's random features, another
// score function. The config holds exactly one (ModelConfig::attention_kind), so two of them
// cannot be combined by construction; what a kind excludes otherwise (stack kinds, rotary
// positions, grouped-query heads, ...) is the compatibility table of
// core/config/variant_choices.cpp.
//
// In a config file each keeps its section: "shaw" and "adaptive_span" with "enabled": true,
// "sparse" by a "pattern" other than "none", "lsh" and "performer" with "enabled": true,
// "score" by a "function" other than "scaled_dot".
#include <optional>
#include <variant>

#include "core/variants/adaptive_span/adaptive_span_config.h"
#include "core/variants/alibi/alibi_config.h"
#include "core/variants/performer/performer_config.h"
#include "core/variants/reformer/reformer_config.h"
#include "core/variants/score_functions/score_functions_config.h"
#include "core/variants/shaw/shaw_config.h"
#include "core/variants/sparse/sparse_config.h"

namespace atlas {

// Scaled dot-product softmax attention (the default), optionally with Shaw's relation tables
// and an adaptive span mask (both act inside the same sub-layer and combine), or ALiBi's linear
// distance biases (core/variants/alibi/).
struct SoftmaxAttention {
  // Initialised here so that `SoftmaxAttention{.shaw = ...}` leaves the other empty without a
  // missing-initializer warning.
  std::optional<ShawConfig> shaw = std::nullopt;
  std::optional<AdaptiveSpanConfig> adaptive_span = std::nullopt;
  std::optional<AlibiConfig> alibi = std::nullopt;
};

// SparseConfig's pattern is never "none" here, ScoreConfig's function never "scaled_dot":
// those are SoftmaxAttention (validate_config refuses them).
using AttentionKind =
    std::variant<SoftmaxAttention, SparseConfig, LshConfig, PerformerConfig, ScoreConfig>;

}  // namespace atlas
