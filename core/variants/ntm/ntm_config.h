#pragma once
// Config of the memory / convolution / image members of seed 004's attention family, held by
// ModelConfig: the Neural Turing Machine ("ntm"), the Self-Attention GAN block ("sagan") and
// SNAIL ("snail"). Parsed, written and validated by
// core/variants/ntm/ntm_config.cpp; documented in docs/variants.md.
#include <cstdint>

namespace atlas {

// A Neural Turing Machine with a seeded feed-forward controller (core/variants/ntm/ntm_model.cpp) that
// replaces the Transformer stack of a "decoder" model: each token is one time step.
struct NtmConfig {  // a stack kind (core/config/stack_kind.h)
  int64_t memory_slots = 16;     // N
  int64_t memory_width = 8;      // M
  int64_t controller_size = 32;  // hidden units of the controller
  int64_t read_heads = 1;
  int64_t write_heads = 1;
  int64_t shift_range = 1;       // R: shifts -R..R (Graves 2014 used -1, 0, +1)
};

// A Self-Attention GAN block on an image (core/variants/sagan/sagan.cpp): a seeded 1x1 stem lifts RGB to
// `channels`, then f, g (channels / 8) and h (channels / 2) 1x1 projections, attention over
// locations, W_v and y = x + gamma o. Replaces the Transformer of an "encoder" model.
struct SaganConfig {  // a stack kind (core/config/stack_kind.h)
  int64_t channels = 32;    // C (>= 8 so that C / 8 >= 1)
  int64_t image_size = 32;  // the image is resampled to image_size x image_size locations
  bool pool_keys = true;    // 2x2 max-pool keys and values (the authors' code does)
  float gamma = 0.0f;       // initial residual scale; 0 (the paper's init) = identity block
};

// SNAIL (Mishra et al. 2018, core/variants/snail/snail.h): causal dilated temporal-convolution blocks
// interleaved with causal attention blocks over the token embeddings (d_model channels), then
// a linear output head to the vocabulary. Replaces the Transformer of a "decoder" model.
struct SnailConfig {  // a stack kind (core/config/stack_kind.h)
  int64_t length = 64;      // T: each TC block has ceil(log2 T) dense blocks; longer inputs refused
  int64_t filters = 8;      // D of every dense block
  int64_t key_size = 16;    // K of every attention block
  int64_t value_size = 8;   // V of every attention block
  int64_t tc_blocks = 2;    // Attn, TC, Attn, ..., Attn
  bool paper_dilations = false;  // 2, 4, ..., 2^n (the paper's pseudo-code) instead of 1, 2, ...
};

}  // namespace atlas
