// The recurrent seq2seq / Pointer Network as a stack kind (core/model/stack_kind_module.h): a
// model of its own on the host, described by its cells, alignment and score function.
#include <string>

#include "core/model/stack_kind_module.h"
#include "core/variants/score_functions/score_functions.h"  // score_function_name
#include "core/variants/seq2seq/seq2seq.h"

namespace atlas {

namespace {

bool seq2seq_stack_used(const ModelConfig& c) { return c.rnn_seq2seq() != nullptr; }

// Its alignment scores always have a score function: the line is written here when the config
// names none (`atlas info` writes it for a config's score function otherwise).
void describe_seq2seq(const ModelConfig& c, std::ostream& s) {
  const Seq2SeqConfig& r = *c.rnn_seq2seq();
  const char* align[] = {"global", "local-m", "local-p"};
  s << "recurrent seq2seq (core/variants/seq2seq/seq2seq.cpp): " << (r.cell == RnnCell::Gru ? "GRU" : "LSTM")
    << ", hidden " << r.hidden_size << (r.bidirectional ? ", bidirectional encoder" : "")
    << ", " << (r.style == AttentionStyle::Bahdanau ? "Bahdanau" : "Luong") << " decoder, "
    << align[int(r.alignment)] << (r.alignment == Alignment::Global ? "" : " (D " + std::to_string(r.window) + ")")
    << " " << (r.selection == Selection::Soft ? "soft" : "hard") << " attention, "
    << (r.output == Seq2SeqOutput::Pointer ? "pointer output" : "vocabulary output") << "\n";
  s << "embedding: " << c.d_model << ", vocab: " << c.vocab_size << "\n";
  if (!c.score()) s << "score function: " << score_function_name(c.score_function().function) << "\n";
}

// Its alignment (or the Pointer Net's pointer distribution) between the decoder and encoder states.
ScoredAlignment seq2seq_scored_alignment(const ModelConfig& c) {
  const std::string kind = c.rnn_seq2seq()->output == Seq2SeqOutput::Pointer ? "pointer" : "seq2seq";
  return {kind == "pointer" ? "pointer.probs" : "seq2seq.alignment", kind + ".decoder_states",
          kind + ".encoder_states", "attention"};
}

const HostModelKind kSeq2SeqHostModel{
    .param_specs = seq2seq_param_specs,
    .forward = seq2seq_forward,
    .untrainable = "the recurrent seq2seq / pointer network",
    .scored_alignment = seq2seq_scored_alignment,
};

const StackKindModule kSeq2SeqStackKind{
    .name = "rnn_seq2seq",
    .used_by = seq2seq_stack_used,
    .host = &kSeq2SeqHostModel,
    .has_route = true,
    .route = StackRoute::HostModel,
    .describe_head = describe_seq2seq,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> seq2seq_stack_kinds() { return {&kSeq2SeqStackKind}; }
}  // namespace variants

}  // namespace atlas
