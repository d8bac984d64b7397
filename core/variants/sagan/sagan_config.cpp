// The "sagan" config section (see config_json.h): the Self-Attention GAN block, declared once as a field table
// (core/config/field_table.h). Keys are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

// 64 x 64 locations = a 4096 x 4096 attention matrix (64 MB): the most a view can hold.
const FieldTable<SaganConfig> kSaganFields = {
    integer_field("channels", &SaganConfig::channels, 8, 1024),
    integer_field("image_size", &SaganConfig::image_size, 2, 64),
    bool_field("pool_keys", &SaganConfig::pool_keys),
    number_field("gamma", &SaganConfig::gamma, -1e6, 1e6)};

void sagan_combinations(const ModelConfig& c, const SaganConfig&, const std::string& origin) {
  if (c.architecture != Architecture::Encoder)
    fail(origin, "sagan.enabled attends over image locations without a mask; it needs "
                 "architecture \"encoder\"");
}

}  // namespace

namespace variants {

std::vector<ConfigSection> sagan_sections() {
  return {stack_section("sagan", &kSaganFields, sagan_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> sagan_choices() {
  return {{"sagan", "sagan.enabled", [](const ModelConfig& c) { return c.sagan() != nullptr; },
           {"replacing", "not_plain", "variant"}, {"shaw", "adaptive_span", "@efficient"},
           "it replaces the Transformer stack"}};
}

}  // namespace variants

}  // namespace atlas::config_json
