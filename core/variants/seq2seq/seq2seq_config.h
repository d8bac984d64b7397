#pragma once
// Config of the recurrent encoder-decoder with attention and the Pointer Network (seed 004), a
// stack kind (core/config/stack_kind.h) held by ModelConfig; the "rnn_seq2seq" section, read,
// written and validated by core/variants/seq2seq/seq2seq_config.cpp (keys in docs/variants.md).
// Its score function is the config's (core/variants/score_functions/score_functions_config.h).
#include <cstdint>

namespace atlas {

enum class RnnCell { Gru, Lstm };
enum class AttentionStyle { Bahdanau, Luong };
enum class Alignment { Global, LocalM, LocalP };
enum class Selection { Soft, Hard };
enum class Seq2SeqOutput { Vocab, Pointer };

// Recurrent encoder-decoder with attention (Bahdanau et al. 2015; Luong et al. 2015) and the
// Pointer Network (Vinyals et al. 2015): core/variants/seq2seq/seq2seq.cpp. Replaces the Transformer stacks of an
// "encoder-decoder" model; d_model is the embedding size, the score function is `score`.
struct Seq2SeqConfig {
  // Its name in the compatibility table and the config key that chooses it (stack_kind.h).
  static constexpr const char* kStackKindName = "rnn_seq2seq";
  static constexpr const char* kStackKindKey = "rnn_seq2seq.enabled";
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
