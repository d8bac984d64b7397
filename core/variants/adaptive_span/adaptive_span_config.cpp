// Config sections of Shaw, adaptive span, Transformer-XL, GTrXL gating and the Universal Transformer (see config_json.h): "shaw", "adaptive_span",
// "universal", "xl", "gating".
// Keys and ranges are documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

const EnumTable<SpanMaskMode> kSpanModes = {{"inside", SpanMaskMode::Inside},
                                            {"after", SpanMaskMode::After}};

// ---- shaw ----
// k = 0 is legal (a single table row: every pair gets the same a^K, a^V); the upper bound keeps
// the tables [2k+1, d_head] within the size limits of a model file.
const FieldTable<ShawConfig> kShawFields = {
    integer_field("max_distance", &ShawConfig::max_distance, 0, 65536),
    bool_field("efficient", &ShawConfig::efficient)};

// ---- adaptive_span ----
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

// ---- universal ----
const EnumTable<ActUpdate> kActUpdates = {{"interpolate", ActUpdate::Interpolate},
                                          {"weighted_sum", ActUpdate::WeightedSum}};
const FieldTable<UniversalConfig> kUniversalFields = {
    bool_field("act", &UniversalConfig::act),
    integer_field("max_steps", &UniversalConfig::max_steps, 1, 1024),
    open_number_field("epsilon", &UniversalConfig::epsilon, 0.0, 1.0),  // halting at 1 - eps
    enum_field("update", &UniversalConfig::update, kActUpdates),
    number_field("halting_bias_init", &UniversalConfig::halting_bias_init, -1e6, 1e6)};

void universal_combinations(const ModelConfig& c, const UniversalConfig&, const std::string& origin) {
  if (c.architecture == Architecture::EncoderDecoder)
    fail(origin, "universal.enabled: the Universal Transformer is implemented for encoder-only "
                 "and decoder-only models; architecture is encoder-decoder");
  if (c.positional != Positional::Sinusoidal)
    fail(origin, "universal.enabled adds a sinusoidal position + time signal at every step; "
                 "set positional to \"sinusoidal\" (sinusoid_layout is honoured)");
}

// ---- xl ----
constexpr int64_t kMaxXLLength = 65536;  // memory rows per layer; segment rows
const FieldTable<XLConfig> kXLFields = {
    integer_field("segment_length", &XLConfig::segment_length, 1, kMaxXLLength),
    integer_field("mem_len", &XLConfig::mem_len, 0, kMaxXLLength),
    integer_field("clamp_len", &XLConfig::clamp_len, -1, kMaxXLLength),
    bool_field("same_length", &XLConfig::same_length)};

void check_gating(const ModelConfig& c, const GatingConfig& g, const std::string& origin);

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
  if (x.gating) check_gating(c, *x.gating, origin);
}

// ---- gating (GTrXL): "enabled" sets XLConfig::gating of a Transformer-XL stack ----
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

void check_gating(const ModelConfig& c, const GatingConfig& g, const std::string& origin) {
  validate_fields(kGatingFields, g, "gating", origin);
  if (g.identity_map_reorder && c.norm_position != NormPosition::Pre)
    fail(origin, "gating.identity_map_reorder puts layer norm on the sub-layer input only (TrXL-I); "
                 "set norm_position to \"pre\", or identity_map_reorder to false to gate a "
                 "post-norm block");
}

void read_gating(const Json& o, const Reader& r, ModelConfig& c) {
  GatingConfig g;
  if (!read_enabled_section(kGatingFields, o, r, g, "gating")) return;
  // Sections are read in the order of relative_recurrent_sections(): "xl" before "gating".
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

// Gates set by code are checked with the Transformer-XL stack that holds them (xl_combinations).
void validate_gating(const ModelConfig&, const std::string&) {}

}  // namespace

std::vector<ConfigSection> relative_recurrent_sections() {
  return {softmax_part_section<ShawConfig, &SoftmaxAttention::shaw>("shaw", &kShawFields),
          softmax_part_section<AdaptiveSpanConfig, &SoftmaxAttention::adaptive_span>(
              "adaptive_span", &kSpanFields),
          stack_section("universal", &kUniversalFields, universal_combinations),
          stack_section("xl", &kXLFields, xl_combinations),
          {"gating", read_gating, write_gating, validate_gating}};
}

}  // namespace atlas::config_json
