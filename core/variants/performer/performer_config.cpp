// The "performer" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and defaults are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {
namespace {

const FieldTable<PerformerConfig> kPerformerFields = {
    integer_field("features", &PerformerConfig::features, 1, 1 << 20),
    unsigned_field("seed", &PerformerConfig::seed)};

// "enabled": true makes Performer the config's attention kind.
void read_performer(const Json& o, const Reader& r, ModelConfig& c) {
  PerformerConfig p;
  if (read_enabled_section(kPerformerFields, o, r, p, "performer"))
    choose_attention(c, p, "performer", r.origin);
}

OrderedJson write_performer(const ModelConfig& c) {
  OrderedJson j;
  j["enabled"] = c.performer() != nullptr;
  if (!c.performer()) return j;
  for (const Field<PerformerConfig>& f : kPerformerFields) f.write(*c.performer(), j);
  return j;
}

void validate_performer(const ModelConfig& c, const std::string& origin) {
  if (c.performer()) validate_fields(kPerformerFields, *c.performer(), "performer", origin);
}

}  // namespace

namespace variants {

std::vector<ConfigSection> performer_sections() {
  return {{"performer", read_performer, write_performer, validate_performer}};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> performer_choices() {
  return {{"performer", "performer.enabled",
           [](const ModelConfig& c) { return c.performer() != nullptr; },
           {"attention", "efficient", "not_plain", "variant"}, {"sparse", "lsh"},
           "each is a different attention sub-layer: pick one"}};
}

}  // namespace variants

}  // namespace atlas::config_json
