// The "shaw" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and ranges are documented in docs/variants.md.
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

// k = 0 is legal (a single table row: every pair gets the same a^K, a^V); the upper bound keeps
// the tables [2k+1, d_head] within the size limits of a model file.
const FieldTable<ShawConfig> kShawFields = {
    integer_field("max_distance", &ShawConfig::max_distance, 0, 65536),
    bool_field("efficient", &ShawConfig::efficient)};

}  // namespace

namespace variants {

std::vector<ConfigSection> shaw_sections() {
  return {softmax_part_section<ShawConfig, &SoftmaxAttention::shaw>("shaw", &kShawFields)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> shaw_choices() {
  return {{"shaw", "shaw.enabled", [](const ModelConfig& c) { return c.shaw() != nullptr; },
           {"attention", "not_plain", "variant"}, {"@efficient"},
           "sparse, LSH and Performer attention take over the sub-layer Shaw's relative positions "
           "live in"}};
}

}  // namespace variants

}  // namespace atlas::config_json
