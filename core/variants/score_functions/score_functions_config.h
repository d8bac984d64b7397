#pragma once
// Config of the alignment score function of every attention layer (seed 004, "Attention?
// Attention!"): another score than scaled dot is an attention kind (core/config/attention_kind.h)
// held by ModelConfig, which the recurrent seq2seq reads too; the "score" section, read, written
// and validated by core/variants/score_functions/score_functions_config.cpp (keys in
// docs/variants.md).
#include <cstdint>
#include <string>

namespace atlas {

// score(s, h) of seed 004's summary table. ScaledDot is the Transformer's (the default, run by
// the backend's fused attention); the others run on the host (core/variants/score_functions/score_functions.cpp).
enum class ScoreFunction { ScaledDot, Dot, General, Additive, Cosine, Location };

struct ScoreConfig {
  ScoreFunction function = ScoreFunction::ScaledDot;
  int64_t d_attn = 0;     // additive: hidden size of v_a^T tanh(W1 s + W2 h); 0 = d_head
  float strength = 1.0f;  // cosine: beta in beta * cos(s, h) (Graves 2014 key strength)
};

namespace config_json {
// f as the config file spells it ("additive"), for messages of other sections (rnn_seq2seq);
// throws for a value outside the enum.
std::string score_function_key(ScoreFunction f);
}  // namespace config_json

}  // namespace atlas
