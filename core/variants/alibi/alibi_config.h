#pragma once
// Config of ALiBi (Press, Smith & Lewis 2022, "Train Short, Test Long: Attention with Linear
// Biases"), a part of softmax attention (core/config/attention_kind.h); the "alibi" section is
// read, written and validated by core/variants/alibi/alibi_config.cpp (keys in
// docs/variants.md). Each head h = 1..H adds -m_h |i - j| to its scores before the softmax,
// with the geometric slopes m_h = 2^(-bias_max h / H) when H is a power of two (and Press's
// interleaving rule otherwise: core/variants/alibi/alibi_slopes.h). A model with ALiBi has
// no position embeddings (positional "none"), as in the paper, BLOOM and MPT.
namespace atlas {

struct AlibiConfig {
  // The 8 of 2^(-8h/H): the paper's and BLOOM's value; MPT's config calls it alibi_bias_max.
  float bias_max = 8.0f;
};

struct ModelConfig;
// The config's ALiBi part, else nullptr (defined with the section, alibi_config.cpp).
const AlibiConfig* alibi_of(const ModelConfig& c);

}  // namespace atlas
