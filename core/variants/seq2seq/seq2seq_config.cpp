// The "rnn_seq2seq" config section (see config_json.h): the recurrent encoder-decoder with
// attention and the Pointer Network, declared once as a field table (core/config/field_table.h).
// Keys are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<RnnCell> kCells = {{"gru", RnnCell::Gru}, {"lstm", RnnCell::Lstm}};
const EnumTable<AttentionStyle> kStyles = {{"bahdanau", AttentionStyle::Bahdanau},
                                           {"luong", AttentionStyle::Luong}};
const EnumTable<Alignment> kAlignments = {
    {"global", Alignment::Global}, {"local-m", Alignment::LocalM}, {"local-p", Alignment::LocalP}};
const EnumTable<Selection> kSelections = {{"soft", Selection::Soft}, {"hard", Selection::Hard}};
const EnumTable<Seq2SeqOutput> kOutputs = {{"vocab", Seq2SeqOutput::Vocab},
                                           {"pointer", Seq2SeqOutput::Pointer}};

// window: D >= 1 keeps Luong's window non-empty for any predicted centre p_t in [0, S].
const FieldTable<Seq2SeqConfig> kSeq2SeqFields = {
    enum_field("cell", &Seq2SeqConfig::cell, kCells),
    bool_field("bidirectional", &Seq2SeqConfig::bidirectional),
    integer_field("hidden_size", &Seq2SeqConfig::hidden_size, 1, 4096),
    enum_field("style", &Seq2SeqConfig::style, kStyles),
    enum_field("alignment", &Seq2SeqConfig::alignment, kAlignments),
    integer_field("window", &Seq2SeqConfig::window, 1, 65536),
    enum_field("selection", &Seq2SeqConfig::selection, kSelections),
    enum_field("output", &Seq2SeqConfig::output, kOutputs)};

void seq2seq_combinations(const ModelConfig& c, const Seq2SeqConfig& s, const std::string& origin) {
  if (c.architecture != Architecture::EncoderDecoder)
    fail(origin, "rnn_seq2seq.enabled needs architecture \"encoder-decoder\" (a source and a "
                 "target text)");
  if (c.bos_id >= 0)
    fail(origin, "rnn_seq2seq.enabled starts the decoder from a learned start vector; set "
                 "bos_id to -1 (got " + std::to_string(c.bos_id) + ")");
  const int64_t dec = s.hidden_size, enc = s.hidden_size * (s.bidirectional ? 2 : 1);
  const ScoreFunction f = c.score_function().function;
  if ((f == ScoreFunction::ScaledDot || f == ScoreFunction::Dot || f == ScoreFunction::Cosine) &&
      dec != enc)
    fail(origin, "score.function " + score_function_key(f) +
                     " compares the decoder state (" + std::to_string(dec) +
                     ") with the encoder state (" + std::to_string(enc) +
                     ", bidirectional doubles it) and needs equal sizes; use \"general\" or "
                     "\"additive\", or set rnn_seq2seq.bidirectional to false");
}

}  // namespace

namespace variants {

std::vector<ConfigSection> seq2seq_sections() {
  return {stack_section("rnn_seq2seq", &kSeq2SeqFields, seq2seq_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> seq2seq_choices() {
  return {{"rnn_seq2seq", "rnn_seq2seq.enabled",
           [](const ModelConfig& c) { return c.rnn_seq2seq() != nullptr; },
           {"replacing", "not_plain", "variant"}, {"shaw", "adaptive_span", "@efficient"},
           "it replaces the Transformer stacks"}};
}

}  // namespace variants

}  // namespace atlas::config_json
