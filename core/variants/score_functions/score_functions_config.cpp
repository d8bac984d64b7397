// The "score" config section (see config_json.h): the alignment score function of every
// attention layer, declared once as a field table (core/config/field_table.h). Keys are
// documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<ScoreFunction> kScoreFunctions = {
    {"scaled_dot", ScoreFunction::ScaledDot}, {"dot", ScoreFunction::Dot},
    {"general", ScoreFunction::General},      {"additive", ScoreFunction::Additive},
    {"cosine", ScoreFunction::Cosine},        {"location", ScoreFunction::Location}};

void check_key_strength(const ScoreConfig& s, const std::string& path, const std::string& origin) {
  if (!(s.strength > 0.0f))
    fail(origin, path + " (cosine key strength beta) must be > 0, got " + format_float(s.strength));
}

const FieldTable<ScoreConfig> kScoreFields = {
    enum_field("function", &ScoreConfig::function, kScoreFunctions),
    integer_field("d_attn", &ScoreConfig::d_attn, 0, 65536),
    checked_number_field("strength", &ScoreConfig::strength, check_key_strength)};

// A function other than "scaled_dot" makes it the config's attention kind; the fields are
// range-checked either way.
void read_score(const Json& o, const Reader& r, ModelConfig& c) {
  ScoreConfig s;
  read_fields(kScoreFields, o, r, s, "score");
  validate_fields(kScoreFields, s, "score", r.origin);
  if (s.function != ScoreFunction::ScaledDot) choose_attention(c, s, "score_function", r.origin);
}

OrderedJson write_score(const ModelConfig& c) {
  return write_fields(kScoreFields, c.score_function());
}

void validate_score(const ModelConfig& c, const std::string& origin) {
  if (!c.score()) return;
  if (c.score()->function == ScoreFunction::ScaledDot)
    fail(origin, "score.function \"scaled_dot\" is the softmax attention kind, not a score kind");
  validate_fields(kScoreFields, *c.score(), "score", origin);
}

}  // namespace

std::string score_function_key(ScoreFunction f) { return enum_name(f, kScoreFunctions, "score"); }

namespace variants {

std::vector<ConfigSection> score_functions_sections() {
  return {{"score", read_score, write_score, validate_score}};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> score_functions_choices() {
  return {{"score_function", "score.function",
           [](const ModelConfig& c) { return c.score() != nullptr; },
           {"attention", "not_plain", "variant"}, {"shaw", "adaptive_span", "xl", "@efficient"},
           "they compute their own scores; use \"scaled_dot\""}};
}

}  // namespace variants

}  // namespace atlas::config_json
