// The "xl" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and ranges are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

constexpr int64_t kMaxXLLength = 65536;  // memory rows per layer; segment rows
const FieldTable<XLConfig> kXLFields = {
    integer_field("segment_length", &XLConfig::segment_length, 1, kMaxXLLength),
    integer_field("mem_len", &XLConfig::mem_len, 0, kMaxXLLength),
    integer_field("clamp_len", &XLConfig::clamp_len, -1, kMaxXLLength),
    bool_field("same_length", &XLConfig::same_length)};

void xl_combinations(const ModelConfig& c, const XLConfig& x, const std::string& origin) {
  if (x.same_length && x.mem_len < 1)
    fail(origin, "xl.same_length lets each query see the last mem_len keys; it needs "
                 "xl.mem_len >= 1, got 0");
  if (c.architecture != Architecture::Decoder)
    fail(origin, "xl.enabled: Transformer-XL is implemented for decoder-only models");
  if (c.positional != Positional::None)
    fail(origin, "xl.enabled uses relative positions only; set positional to \"none\"");
  if (c.pad_id >= 0)
    fail(origin, "xl.enabled does not mask padding keys; set pad_id to -1");
  if (x.gating) check_gating(c, *x.gating, origin);  // GTrXL (core/variants/gtrxl/gtrxl_config.cpp)
}

}  // namespace

namespace variants {

std::vector<ConfigSection> transformer_xl_sections() {
  return {stack_section("xl", &kXLFields, xl_combinations)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> transformer_xl_choices() {
  return {{"xl", "xl.enabled", [](const ModelConfig& c) { return c.xl() != nullptr; },
           {"not_plain", "variant"}, {"shaw", "adaptive_span", "@efficient"},
           "Transformer-XL's attention has relative positions and memory of its own"}};
}

}  // namespace variants

}  // namespace atlas::config_json
