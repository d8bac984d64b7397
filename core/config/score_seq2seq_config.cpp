// Config sections of the attention family of seed 004 (see config_json.h): "score" (the
// alignment score function of every attention layer) and "rnn_seq2seq" (recurrent
// encoder-decoder with attention, Pointer Network). Keys are documented in docs/variants.md.
#include "core/config/config_json.h"

namespace atlas::config_json {

namespace {

const EnumTable<ScoreFunction> kScoreFunctions = {
    {"scaled_dot", ScoreFunction::ScaledDot}, {"dot", ScoreFunction::Dot},
    {"general", ScoreFunction::General},      {"additive", ScoreFunction::Additive},
    {"cosine", ScoreFunction::Cosine},        {"location", ScoreFunction::Location}};
const EnumTable<RnnCell> kCells = {{"gru", RnnCell::Gru}, {"lstm", RnnCell::Lstm}};
const EnumTable<AttentionStyle> kStyles = {{"bahdanau", AttentionStyle::Bahdanau},
                                           {"luong", AttentionStyle::Luong}};
const EnumTable<Alignment> kAlignments = {
    {"global", Alignment::Global}, {"local-m", Alignment::LocalM}, {"local-p", Alignment::LocalP}};
const EnumTable<Selection> kSelections = {{"soft", Selection::Soft}, {"hard", Selection::Hard}};
const EnumTable<Seq2SeqOutput> kOutputs = {{"vocab", Seq2SeqOutput::Vocab},
                                           {"pointer", Seq2SeqOutput::Pointer}};

// ---- score ----
const std::vector<std::string> kScoreKeys = {"function", "d_attn", "strength"};

void read_score(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kScoreKeys, "score", r.origin);
  ScoreConfig& s = c.score;
  if (auto it = o.find("function"); it != o.end())
    s.function = r.enumeration(*it, "score.function", kScoreFunctions);
  if (auto it = o.find("d_attn"); it != o.end()) s.d_attn = r.integer(*it, "score.d_attn");
  if (auto it = o.find("strength"); it != o.end()) s.strength = r.number(*it, "score.strength");
}

OrderedJson write_score(const ModelConfig& c) {
  OrderedJson j;
  j["function"] = enum_name(c.score.function, kScoreFunctions, "score.function");
  j["d_attn"] = c.score.d_attn;
  j["strength"] = shortest_float(c.score.strength);
  return j;
}

void validate_score(const ModelConfig& c, const std::string& origin) {
  check_range(c.score.d_attn, 0, 65536, "score.d_attn", origin);
  if (!(c.score.strength > 0.0f))
    fail(origin, "score.strength (cosine key strength beta) must be > 0, got " +
                     format_float(c.score.strength));
  if (c.score.function == ScoreFunction::ScaledDot || c.rnn_seq2seq.enabled) return;
  // These variants compute their own scores; a second score function would be silently dropped.
  if (c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled ||
      c.shaw.enabled || c.adaptive_span.enabled || c.xl.enabled)
    fail(origin, "score.function " + enum_name(c.score.function, kScoreFunctions, "score") +
                     " cannot be combined with sparse, lsh, performer, shaw, adaptive_span or xl "
                     "(they compute their own scores); use \"scaled_dot\"");
}

// ---- rnn_seq2seq ----
const std::vector<std::string> kSeq2SeqKeys = {"enabled", "cell",   "bidirectional", "hidden_size",
                                               "style",   "alignment", "window",     "selection",
                                               "output"};

void read_seq2seq(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kSeq2SeqKeys, "rnn_seq2seq", r.origin);
  Seq2SeqConfig& s = c.rnn_seq2seq;
  if (auto it = o.find("enabled"); it != o.end()) s.enabled = r.boolean(*it, "rnn_seq2seq.enabled");
  if (auto it = o.find("cell"); it != o.end()) s.cell = r.enumeration(*it, "rnn_seq2seq.cell", kCells);
  if (auto it = o.find("bidirectional"); it != o.end())
    s.bidirectional = r.boolean(*it, "rnn_seq2seq.bidirectional");
  if (auto it = o.find("hidden_size"); it != o.end())
    s.hidden_size = r.integer(*it, "rnn_seq2seq.hidden_size");
  if (auto it = o.find("style"); it != o.end())
    s.style = r.enumeration(*it, "rnn_seq2seq.style", kStyles);
  if (auto it = o.find("alignment"); it != o.end())
    s.alignment = r.enumeration(*it, "rnn_seq2seq.alignment", kAlignments);
  if (auto it = o.find("window"); it != o.end()) s.window = r.integer(*it, "rnn_seq2seq.window");
  if (auto it = o.find("selection"); it != o.end())
    s.selection = r.enumeration(*it, "rnn_seq2seq.selection", kSelections);
  if (auto it = o.find("output"); it != o.end())
    s.output = r.enumeration(*it, "rnn_seq2seq.output", kOutputs);
}

OrderedJson write_seq2seq(const ModelConfig& c) {
  const Seq2SeqConfig& s = c.rnn_seq2seq;
  OrderedJson j;
  j["enabled"] = s.enabled;
  j["cell"] = enum_name(s.cell, kCells, "rnn_seq2seq.cell");
  j["bidirectional"] = s.bidirectional;
  j["hidden_size"] = s.hidden_size;
  j["style"] = enum_name(s.style, kStyles, "rnn_seq2seq.style");
  j["alignment"] = enum_name(s.alignment, kAlignments, "rnn_seq2seq.alignment");
  j["window"] = s.window;
  j["selection"] = enum_name(s.selection, kSelections, "rnn_seq2seq.selection");
  j["output"] = enum_name(s.output, kOutputs, "rnn_seq2seq.output");
  return j;
}

void validate_seq2seq(const ModelConfig& c, const std::string& origin) {
  const Seq2SeqConfig& s = c.rnn_seq2seq;
  check_range(s.hidden_size, 1, 4096, "rnn_seq2seq.hidden_size", origin);
  // D >= 1 keeps Luong's window non-empty for any predicted centre p_t in [0, S].
  check_range(s.window, 1, 65536, "rnn_seq2seq.window", origin);
  if (!s.enabled) return;
  if (c.architecture != Architecture::EncoderDecoder)
    fail(origin, "rnn_seq2seq.enabled needs architecture \"encoder-decoder\" (a source and a "
                 "target text)");
  if (c.bos_id >= 0)
    fail(origin, "rnn_seq2seq.enabled starts the decoder from a learned start vector; set "
                 "bos_id to -1 (got " + std::to_string(c.bos_id) + ")");
  if (c.universal.enabled || c.xl.enabled || c.shaw.enabled || c.adaptive_span.enabled ||
      c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled)
    fail(origin, "rnn_seq2seq.enabled replaces the Transformer stacks; it cannot be combined "
                 "with universal, xl, shaw, adaptive_span, sparse, lsh or performer");
  const int64_t dec = s.hidden_size, enc = s.hidden_size * (s.bidirectional ? 2 : 1);
  const ScoreFunction f = c.score.function;
  if ((f == ScoreFunction::ScaledDot || f == ScoreFunction::Dot || f == ScoreFunction::Cosine) &&
      dec != enc)
    fail(origin, "score.function " + enum_name(f, kScoreFunctions, "score") +
                     " compares the decoder state (" + std::to_string(dec) +
                     ") with the encoder state (" + std::to_string(enc) +
                     ", bidirectional doubles it) and needs equal sizes; use \"general\" or "
                     "\"additive\", or set rnn_seq2seq.bidirectional to false");
}

}  // namespace

std::vector<ConfigSection> score_seq2seq_sections() {
  return {{"score", read_score, write_score, validate_score},
          {"rnn_seq2seq", read_seq2seq, write_seq2seq, validate_seq2seq}};
}

}  // namespace atlas::config_json
