// The "ntm" config section (see config_json.h): the Neural Turing Machine, declared once as a field table
// (core/config/field_table.h). Keys are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const FieldTable<NtmConfig> kNtmFields = {
    integer_field("memory_slots", &NtmConfig::memory_slots, 1, 4096),
    integer_field("memory_width", &NtmConfig::memory_width, 1, 1024),
    integer_field("controller_size", &NtmConfig::controller_size, 1, 4096),
    integer_field("read_heads", &NtmConfig::read_heads, 1, 16),
    integer_field("write_heads", &NtmConfig::write_heads, 0, 16),
    integer_field("shift_range", &NtmConfig::shift_range, 0, 2047)};

void ntm_combinations(const ModelConfig& c, const NtmConfig& n, const std::string& origin) {
  // 2R + 1 <= N: larger kernels would wrap onto themselves and count an offset twice.
  if (2 * n.shift_range + 1 > n.memory_slots)
    fail(origin, "ntm.shift_range must be in [0, (memory_slots - 1) / 2] = [0, " +
                     std::to_string((n.memory_slots - 1) / 2) + "], got " + std::to_string(n.shift_range));
  if (c.architecture != Architecture::Decoder)
    fail(origin, "ntm.enabled runs one step per token of one sequence; it needs architecture "
                 "\"decoder\"");
}

}  // namespace

namespace variants {

std::vector<ConfigSection> ntm_sections() {
  return {stack_section("ntm", &kNtmFields, ntm_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> ntm_choices() {
  return {{"ntm", "ntm.enabled", [](const ModelConfig& c) { return c.ntm() != nullptr; },
           {"replacing", "not_plain", "variant"}, {"shaw", "adaptive_span", "@efficient"},
           "it replaces the Transformer stack"}};
}

}  // namespace variants

}  // namespace atlas::config_json
