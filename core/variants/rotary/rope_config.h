#pragma once
// Config of rotary position embedding (RoPE; RoFormer, Su et al. 2021; the positions of Llama,
// Mistral, Qwen2, Gemma and Phi-3), chosen by "positional": "rotary" and held by ModelConfig as
// the "rope" section (core/variants/rotary/rope_config.cpp; keys in docs/variants.md).
#include <cstdint>

namespace atlas {

// Which dimensions of a head rotate together with frequency w_i:
//   half     (i, i + r/2): Hugging Face's rotate_half, GPT-NeoX
//   adjacent (2i, 2i + 1): the RoFormer paper, Meta's Llama code, GPT-J, llama.cpp's GGUF "llama"
enum class RopePairing { Half, Adjacent };

// How real checkpoints stretch the frequencies past their training context (HF rope_scaling):
// linear divides every w_i by factor; dynamic (NTK) raises theta once the input is longer than
// original_max_positions; llama3 divides the low frequencies by factor, keeps the high ones and
// interpolates between (Llama 3.1).
enum class RopeScaling { None, Linear, Dynamic, Llama3 };

struct RopeConfig {
  float theta = 10000.0f;     // base: w_i = theta^(-2i/r)
  int64_t rotary_dims = 0;    // r, the rotated leading dimensions of each head; 0 = all of d_head
  RopePairing pairing = RopePairing::Half;
  RopeScaling scaling = RopeScaling::None;
  float factor = 1.0f;                 // linear, dynamic, llama3
  int64_t original_max_positions = 0;  // dynamic, llama3: the training context; 0 = max_positions
  float low_freq_factor = 1.0f;        // llama3
  float high_freq_factor = 4.0f;       // llama3
};

}  // namespace atlas
