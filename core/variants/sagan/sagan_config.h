#pragma once
// Config of the Self-Attention GAN block (seed 004), a stack kind (core/config/stack_kind.h) held by
// ModelConfig; the "sagan" section, read, written and validated by
// core/variants/sagan/sagan_config.cpp (keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// A Self-Attention GAN block on an image (core/variants/sagan/sagan.cpp): a seeded 1x1 stem lifts RGB to
// `channels`, then f, g (channels / 8) and h (channels / 2) 1x1 projections, attention over
// locations, W_v and y = x + gamma o. Replaces the Transformer of an "encoder" model.
struct SaganConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "sagan";
  static constexpr const char* kStackKindKey = "sagan.enabled";
  int64_t channels = 32;    // C (>= 8 so that C / 8 >= 1)
  int64_t image_size = 32;  // the image is resampled to image_size x image_size locations
  bool pool_keys = true;    // 2x2 max-pool keys and values (the authors' code does)
  float gamma = 0.0f;       // initial residual scale; 0 (the paper's init) = identity block
};

}  // namespace atlas
