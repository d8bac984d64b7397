// The "adaptive_span" config section (see config_json.h), declared once as a field table
// (core/config/field_table.h). Keys and ranges are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<SpanMaskMode> kSpanModes = {{"inside", SpanMaskMode::Inside},
                                            {"after", SpanMaskMode::After}};
const EnumTable<SpanDistance> kSpanDistances = {{"paper", SpanDistance::Paper},
                                                {"reference", SpanDistance::Reference}};

// A length in tokens in [1, 2^24]: `what` says why 0 is refused.
Field<AdaptiveSpanConfig> span_length_field(std::string key, int64_t AdaptiveSpanConfig::*member,
                                            std::string what) {
  Field<AdaptiveSpanConfig> f = integer_field(key, member, 1, int64_t(1) << 24);
  f.validate = [member, what](const AdaptiveSpanConfig& s, const std::string& path,
                              const std::string& origin) {
    if (s.*member < 1)
      fail(origin, path + " must be >= 1 (" + what + "), got " + std::to_string(s.*member));
    check_range(s.*member, 1, int64_t(1) << 24, path, origin);
  };
  return f;
}

void check_initial_span(const AdaptiveSpanConfig& s, const std::string& path,
                        const std::string& origin) {
  if (!(s.init_z >= 0.0f) || s.init_z > static_cast<float>(s.max_span))
    fail(origin, path + " must be in [0, max_span = " + std::to_string(s.max_span) + "], got " +
                     format_float(s.init_z));
}

void check_span_loss(const AdaptiveSpanConfig& s, const std::string& path,
                     const std::string& origin) {
  if (!(s.loss_coeff >= 0.0f))
    fail(origin, path + " must be >= 0, got " + format_float(s.loss_coeff));
}

const FieldTable<AdaptiveSpanConfig> kSpanFields = {
    span_length_field("max_span", &AdaptiveSpanConfig::max_span, "a span in tokens"),
    span_length_field("ramp", &AdaptiveSpanConfig::ramp, "the soft mask divides by it"),
    checked_number_field("init_z", &AdaptiveSpanConfig::init_z, check_initial_span),
    enum_field("mode", &AdaptiveSpanConfig::mode, kSpanModes),
    bool_field("dynamic", &AdaptiveSpanConfig::dynamic),
    checked_number_field("loss_coeff", &AdaptiveSpanConfig::loss_coeff, check_span_loss),
    enum_field("distance", &AdaptiveSpanConfig::distance, kSpanDistances)};

}  // namespace

namespace variants {

std::vector<ConfigSection> adaptive_span_sections() {
  return {softmax_part_section<AdaptiveSpanConfig, &SoftmaxAttention::adaptive_span>(
      "adaptive_span", &kSpanFields)};
}

// Its rows of the compatibility table (core/config/variant_choices.h).
std::vector<VariantChoice> adaptive_span_choices() {
  return {{"adaptive_span", "adaptive_span.enabled",
           [](const ModelConfig& c) { return c.adaptive_span() != nullptr; },
           {"attention", "not_plain", "variant"}, {"@efficient"},
           "sparse, LSH and Performer attention take over the sub-layer the span mask lives in"}};
}

}  // namespace variants

}  // namespace atlas::config_json
