#pragma once
// Small pre-norm models with every weight drawn at random, shared by the tests of the
// attribution instruments (DLA, QK decomposition): gains near 1, everything else (biases and
// the norms' shifts included) nonzero, so that every bias term of a formula is exercised.
#include <string>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/tensor/random.h"

namespace atlas::test {

// A 2-layer pre-norm byte-level decoder, d 16, 4 heads, untied output head with a bias.
inline ModelConfig prenorm_two_layer_config(NormKind norm, Positional positional) {
  ModelConfig c;
  c.name = "prenorm-test";
  c.architecture = Architecture::Decoder;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.vocab_size = 256;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.max_positions = 32;
  c.positional = positional;
  c.norm = norm;
  c.norm_position = NormPosition::Pre;
  c.activation = FfnActivation::Gelu;
  c.output = OutputHead::Untied;
  c.head.bias = true;
  c.scale_embedding = true;
  return c;
}

inline ParamStore random_all_params(const ModelConfig& c, uint64_t seed) {
  ParamStore p = init_params(c, seed);
  Rng rng(seed + 1);
  for (auto& [name, t] : p) {
    const bool gain = name.size() > 6 && (name.substr(name.size() - 6) == ".gamma" || name.substr(name.size() - 2) == ".g");
    for (float& v : t.data) v = gain ? 1.0f + 0.3f * float(rng.normal()) : 0.3f * float(rng.normal());
  }
  return p;
}

}  // namespace atlas::test
