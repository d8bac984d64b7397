// The "gating" config section (see config_json.h): GTrXL's gates on a Transformer-XL stack,
// declared once as a field table (core/config/field_table.h). Keys and ranges are documented in
// docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<GateType> kGateTypes = {{"none", GateType::None},
                                        {"input", GateType::Input},
                                        {"output", GateType::Output},
                                        {"highway", GateType::Highway},
                                        {"gru", GateType::Gru}};
// b_g > 0 starts the output, highway and GRU gates near the identity map (the paper's point);
// a negative b_g would start them away from it. 100 already saturates a sigmoid.
const FieldTable<GatingConfig> kGatingFields = {
    enum_field("type", &GatingConfig::type, kGateTypes),
    number_field("bias_init", &GatingConfig::bias_init, 0.0, 100.0),
    bool_field("identity_map_reorder", &GatingConfig::identity_map_reorder)};

// "enabled" sets XLConfig::gating of a Transformer-XL stack.
void read_gating(const Json& o, const Reader& r, ModelConfig& c) {
  GatingConfig g;
  if (!read_enabled_section(kGatingFields, o, r, g, "gating")) return;
  // The section is read after "xl" (its `after`, below).
  if (!c.xl())
    fail(r.origin, "gating.enabled: GTrXL gates the sub-layers of Transformer-XL blocks; set "
                   "xl.enabled to true (the gating section is only valid together with xl)");
  c.xl()->gating = g;
}

OrderedJson write_gating(const ModelConfig& c) {
  OrderedJson j = OrderedJson::object();
  j["enabled"] = c.gating() != nullptr;
  for (const Field<GatingConfig>& f : kGatingFields) f.write(c.gating() ? *c.gating() : GatingConfig{}, j);
  return j;
}

// Gates set by code are checked with the Transformer-XL stack that holds them (check_gating).
void validate_gating(const ModelConfig&, const std::string&) {}

}  // namespace

void check_gating(const ModelConfig& c, const GatingConfig& g, const std::string& origin) {
  validate_fields(kGatingFields, g, "gating", origin);
  if (g.identity_map_reorder && c.norm_position != NormPosition::Pre)
    fail(origin, "gating.identity_map_reorder puts layer norm on the sub-layer input only (TrXL-I); "
                 "set norm_position to \"pre\", or identity_map_reorder to false to gate a "
                 "post-norm block");
}

namespace variants {

std::vector<ConfigSection> gtrxl_sections() {
  return {{"gating", read_gating, write_gating, validate_gating, "xl"}};
}

// GTrXL's gates need a Transformer-XL stack, which the section checks; no row of the
// compatibility table.
std::vector<VariantChoice> gtrxl_choices() { return {}; }

}  // namespace variants

}  // namespace atlas::config_json
