#pragma once
// Config of the memory / convolution / image members of seed 004's attention family, held by
// ModelConfig: the Neural Turing Machine ("ntm") and the Self-Attention GAN block ("sagan"). Parsed, written and validated by
// core/config_attention_family_ii.cpp; documented in docs/variants.md.
#include <cstdint>

namespace atlas {

// A Neural Turing Machine with a seeded feed-forward controller (core/ntm_model.cpp) that
// replaces the Transformer stack of a "decoder" model: each token is one time step.
struct NtmConfig {
  bool enabled = false;
  int64_t memory_slots = 16;     // N
  int64_t memory_width = 8;      // M
  int64_t controller_size = 32;  // hidden units of the controller
  int64_t read_heads = 1;
  int64_t write_heads = 1;
  int64_t shift_range = 1;       // R: shifts -R..R (Graves 2014 used -1, 0, +1)
};

// A Self-Attention GAN block on an image (core/sagan.cpp): a seeded 1x1 stem lifts RGB to
// `channels`, then f, g (channels / 8) and h (channels / 2) 1x1 projections, attention over
// locations, W_v and y = x + gamma o. Replaces the Transformer of an "encoder" model.
struct SaganConfig {
  bool enabled = false;
  int64_t channels = 32;    // C (>= 8 so that C / 8 >= 1)
  int64_t image_size = 32;  // the image is resampled to image_size x image_size locations
  bool pool_keys = true;    // 2x2 max-pool keys and values (the authors' code does)
  float gamma = 0.0f;       // initial residual scale; 0 (the paper's init) = identity block
};

}  // namespace atlas
