// The "snail" config section (see config_json.h): SNAIL, declared once as a field table
// (core/config/field_table.h). Keys are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const FieldTable<SnailConfig> kSnailFields = {
    integer_field("length", &SnailConfig::length, 1, 4096),
    integer_field("filters", &SnailConfig::filters, 1, 1024),
    integer_field("key_size", &SnailConfig::key_size, 1, 1024),
    integer_field("value_size", &SnailConfig::value_size, 1, 1024),
    integer_field("tc_blocks", &SnailConfig::tc_blocks, 0, 8),
    bool_field("paper_dilations", &SnailConfig::paper_dilations)};

void snail_combinations(const ModelConfig& c, const SnailConfig& s, const std::string& origin) {
  if (c.architecture != Architecture::Decoder)
    fail(origin, "snail.enabled is causal (convolutions and attention never read the future); it "
                 "needs architecture \"decoder\"");
  if (s.length > c.max_positions)
    fail(origin, "snail.length " + std::to_string(s.length) + " exceeds max_positions " +
                     std::to_string(c.max_positions));
}

}  // namespace

namespace variants {

std::vector<ConfigSection> snail_sections() {
  return {stack_section("snail", &kSnailFields, snail_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> snail_choices() {
  return {{"snail", "snail.enabled", [](const ModelConfig& c) { return c.snail() != nullptr; },
           {"replacing", "not_plain", "variant"}, {"shaw", "adaptive_span", "@efficient"},
           "it replaces the Transformer stack"}};
}

}  // namespace variants

}  // namespace atlas::config_json
