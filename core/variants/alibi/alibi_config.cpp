// The "alibi" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and ranges are documented in docs/variants.md.
#include "core/config/field_table.h"

namespace atlas {

const AlibiConfig* alibi_of(const ModelConfig& c) {
  return c.softmax() && c.softmax()->alibi ? &*c.softmax()->alibi : nullptr;
}

namespace config_json {

namespace {

// bias_max > 0: a zero would give every head slope 1 (2^0), not "no bias"; from 64 on the
// smallest slope 2^-64 already adds nothing to a float score.
const FieldTable<AlibiConfig> kAlibiFields = {
    open_number_field("bias_max", &AlibiConfig::bias_max, 0.0, 64.0)};

}  // namespace

namespace variants {

std::vector<ConfigSection> alibi_sections() {
  return {softmax_part_section<AlibiConfig, &SoftmaxAttention::alibi>("alibi", &kAlibiFields)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> alibi_choices() {
  return {{"alibi", "alibi.enabled", [](const ModelConfig& c) { return alibi_of(c) != nullptr; },
           // not of the group "variant": a decoder's cached prefix continues with its rows
           {"attention", "not_plain"},
           {"shaw", "adaptive_span", "xl", "universal", "score_function", "rotary", "patches",
            "@efficient", "@replacing"},
           "ALiBi's distance biases are the model's positions, in the plain softmax attention of "
           "the standard stacks"}};
}

}  // namespace variants

}  // namespace config_json

}  // namespace atlas
