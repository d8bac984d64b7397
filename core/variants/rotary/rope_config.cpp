// The "rope" config section, declared once as a field table (core/config/field_table.h): its
// keys, their ranges, and how rotary positions combine with the rest of the config.
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<RopePairing> kPairings = {{"half", RopePairing::Half},
                                          {"adjacent", RopePairing::Adjacent}};
const EnumTable<RopeScaling> kScalings = {{"none", RopeScaling::None},
                                          {"linear", RopeScaling::Linear},
                                          {"dynamic", RopeScaling::Dynamic},
                                          {"llama3", RopeScaling::Llama3}};

const FieldTable<RopeConfig> kRopeFields = {
    number_field("theta", &RopeConfig::theta, 1.0, 1e12),
    integer_field("rotary_dims", &RopeConfig::rotary_dims, 0, 65536),
    enum_field("pairing", &RopeConfig::pairing, kPairings),
    enum_field("scaling", &RopeConfig::scaling, kScalings),
    number_field("factor", &RopeConfig::factor, 1.0, 1e6),
    integer_field("original_max_positions", &RopeConfig::original_max_positions, 0, 1 << 24),
    number_field("low_freq_factor", &RopeConfig::low_freq_factor, 1e-6, 1e6),
    number_field("high_freq_factor", &RopeConfig::high_freq_factor, 1e-6, 1e6),
};

// What the field ranges cannot say. The rotation replaces absolute positions and is applied to
// the q and k of plain softmax self-attention; which variants that excludes is a row of the
// compatibility table (core/config/variant_choices.cpp).
void check_rope_combinations(const ModelConfig& c, const std::string& origin) {
  const RopeConfig& r = c.rope;
  if (r.scaling == RopeScaling::Llama3 && !(r.high_freq_factor > r.low_freq_factor))
    fail(origin, "rope.high_freq_factor must be greater than rope.low_freq_factor for llama3 "
                 "scaling, got " + format_float(r.high_freq_factor) + " and " +
                 format_float(r.low_freq_factor));
  if (c.positional != Positional::Rotary) return;
  const int64_t dims = r.rotary_dims > 0 ? r.rotary_dims : c.d_head();
  if (dims % 2 != 0 || dims > c.d_head())
    fail(origin, "rope.rotary_dims must be even and at most d_head (" +
                     std::to_string(c.d_head()) + "), got " + std::to_string(dims));
  if (r.scaling == RopeScaling::Dynamic && dims < 4)
    fail(origin, "rope.scaling \"dynamic\" needs at least 4 rotated dimensions, got " +
                     std::to_string(dims));
}

}  // namespace

namespace variants {

std::vector<ConfigSection> rotary_sections() {
  return {table_section<&ModelConfig::rope>("rope", &kRopeFields, &check_rope_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> rotary_choices() {
  return {{"rotary", "positional \"rotary\"",
           [](const ModelConfig& c) { return c.positional == Positional::Rotary; }, {},
           {"shaw", "xl", "universal", "lsh", "reversible", "performer", "sparse", "patches",
            "@replacing"},
           "Shaw and XL bring relative positions of their own, Universal a position and time "
           "signal, LSH shares q and k; the others are not rotated by the attention sub-layer RoPE "
           "hooks into"}};
}

}  // namespace variants

}  // namespace atlas::config_json
