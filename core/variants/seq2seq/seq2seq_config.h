#pragma once
// Config of the attention family of seed 004 ("Attention? Attention!"), held by ModelConfig:
// the alignment score function of every attention layer ("score") and the recurrent
// encoder-decoder with attention / Pointer Network ("rnn_seq2seq"). Parsed, written and
// validated by core/variants/seq2seq/seq2seq_config.cpp; documented in docs/variants.md.
#include <cstdint>

namespace atlas {

// score(s, h) of seed 004's summary table. ScaledDot is the Transformer's (the default, run by
// the backend's fused attention); the others run on the host (core/variants/score_functions/score_functions.cpp).
enum class ScoreFunction { ScaledDot, Dot, General, Additive, Cosine, Location };

struct ScoreConfig {
  ScoreFunction function = ScoreFunction::ScaledDot;
  int64_t d_attn = 0;     // additive: hidden size of v_a^T tanh(W1 s + W2 h); 0 = d_head
  float strength = 1.0f;  // cosine: beta in beta * cos(s, h) (Graves 2014 key strength)
};

enum class RnnCell { Gru, Lstm };
enum class AttentionStyle { Bahdanau, Luong };
enum class Alignment { Global, LocalM, LocalP };
enum class Selection { Soft, Hard };
enum class Seq2SeqOutput { Vocab, Pointer };

// Recurrent encoder-decoder with attention (Bahdanau et al. 2015; Luong et al. 2015) and the
// Pointer Network (Vinyals et al. 2015): core/variants/seq2seq/seq2seq.cpp. Replaces the Transformer stacks of an
// "encoder-decoder" model; d_model is the embedding size, the score function is `score`.
struct Seq2SeqConfig {  // a stack kind (core/config/stack_kind.h)
  RnnCell cell = RnnCell::Gru;
  bool bidirectional = true;   // encoder state h_i = [forward_i; backward_i]
  int64_t hidden_size = 32;    // per direction; also the decoder state size
  AttentionStyle style = AttentionStyle::Bahdanau;  // score from s_{t-1} (Bahdanau) or s_t (Luong)
  Alignment alignment = Alignment::Global;
  int64_t window = 2;          // D of Luong's local window [p_t - D, p_t + D]
  Selection selection = Selection::Soft;
  Seq2SeqOutput output = Seq2SeqOutput::Vocab;  // pointer: the attention is the output
};

}  // namespace atlas
