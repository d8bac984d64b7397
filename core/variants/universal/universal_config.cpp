// The "universal" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and ranges are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/config_limits.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<ActUpdate> kActUpdates = {{"interpolate", ActUpdate::Interpolate},
                                          {"weighted_sum", ActUpdate::WeightedSum}};
const FieldTable<UniversalConfig> kUniversalFields = {
    bool_field("act", &UniversalConfig::act),
    integer_field("max_steps", &UniversalConfig::max_steps, 1, kMaxUniversalSteps),
    open_number_field("epsilon", &UniversalConfig::epsilon, 0.0, 1.0),  // halting at 1 - eps
    enum_field("update", &UniversalConfig::update, kActUpdates),
    number_field("halting_bias_init", &UniversalConfig::halting_bias_init, -1e6, 1e6)};

void universal_combinations(const ModelConfig& c, const UniversalConfig&, const std::string& origin) {
  if (c.architecture == Architecture::EncoderDecoder)
    fail(origin, "universal.enabled: the Universal Transformer is implemented for encoder-only "
                 "and decoder-only models; architecture is encoder-decoder");
  if (c.positional != Positional::Sinusoidal)
    fail(origin, "universal.enabled adds a sinusoidal position + time signal at every step; "
                 "set positional to \"sinusoidal\" (sinusoid_layout is honoured)");
}

}  // namespace

namespace variants {

std::vector<ConfigSection> universal_sections() {
  return {stack_section("universal", &kUniversalFields, universal_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> universal_choices() {
  return {{"universal", "universal.enabled",
           [](const ModelConfig& c) { return c.universal() != nullptr; }, {"not_plain", "variant"},
           {"shaw", "adaptive_span", "@efficient"},
           "the Universal Transformer's shared block runs plain softmax attention"}};
}

}  // namespace variants

}  // namespace atlas::config_json
