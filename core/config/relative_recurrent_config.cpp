// Config sections of Shaw, adaptive span, Transformer-XL, GTrXL gating and the Universal Transformer (see config_json.h): "shaw", "adaptive_span",
// "universal", "xl", "gating".
// Keys and ranges are documented in docs/variants.md.
#include "core/config/config_json.h"

namespace atlas::config_json {

namespace {

const EnumTable<SpanMaskMode> kSpanModes = {{"inside", SpanMaskMode::Inside},
                                            {"after", SpanMaskMode::After}};

// Sparse, LSH and Performer attention take over the same sub-layers; combining them with these
// variants would silently drop one of the two, so it is rejected.
void reject_efficient_attention_combination(const ModelConfig& c, const std::string& key, const std::string& origin) {
  if (c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled)
    fail(origin, key + " cannot be combined with sparse, lsh or performer attention");
}

// ---- shaw ----
const std::vector<std::string> kShawKeys = {"enabled", "max_distance", "efficient"};

void read_shaw(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kShawKeys, "shaw", r.origin);
  ShawConfig& s = c.shaw;
  if (auto it = o.find("enabled"); it != o.end()) s.enabled = r.boolean(*it, "shaw.enabled");
  if (auto it = o.find("max_distance"); it != o.end())
    s.max_distance = r.integer(*it, "shaw.max_distance");
  if (auto it = o.find("efficient"); it != o.end()) s.efficient = r.boolean(*it, "shaw.efficient");
}

OrderedJson write_shaw(const ModelConfig& c) {
  OrderedJson j;
  j["enabled"] = c.shaw.enabled;
  j["max_distance"] = c.shaw.max_distance;
  j["efficient"] = c.shaw.efficient;
  return j;
}

void validate_shaw(const ModelConfig& c, const std::string& origin) {
  // k = 0 is legal (a single table row: every pair gets the same a^K, a^V); the upper bound
  // keeps the tables [2k+1, d_head] within the size limits of a model file.
  check_range(c.shaw.max_distance, 0, 65536, "shaw.max_distance", origin);
  if (c.shaw.enabled) reject_efficient_attention_combination(c, "shaw.enabled", origin);
}

// ---- adaptive_span ----
const std::vector<std::string> kSpanKeys = {"enabled", "max_span", "ramp",      "init_z",
                                            "mode",    "dynamic",  "loss_coeff", "distance"};
const EnumTable<SpanDistance> kSpanDistances = {{"paper", SpanDistance::Paper},
                                                {"reference", SpanDistance::Reference}};

void read_span(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kSpanKeys, "adaptive_span", r.origin);
  AdaptiveSpanConfig& s = c.adaptive_span;
  if (auto it = o.find("enabled"); it != o.end()) s.enabled = r.boolean(*it, "adaptive_span.enabled");
  if (auto it = o.find("max_span"); it != o.end()) s.max_span = r.integer(*it, "adaptive_span.max_span");
  if (auto it = o.find("ramp"); it != o.end()) s.ramp = r.integer(*it, "adaptive_span.ramp");
  if (auto it = o.find("init_z"); it != o.end()) s.init_z = r.number(*it, "adaptive_span.init_z");
  if (auto it = o.find("mode"); it != o.end())
    s.mode = r.enumeration(*it, "adaptive_span.mode", kSpanModes);
  if (auto it = o.find("dynamic"); it != o.end()) s.dynamic = r.boolean(*it, "adaptive_span.dynamic");
  if (auto it = o.find("loss_coeff"); it != o.end())
    s.loss_coeff = r.number(*it, "adaptive_span.loss_coeff");
  if (auto it = o.find("distance"); it != o.end())
    s.distance = r.enumeration(*it, "adaptive_span.distance", kSpanDistances);
}

OrderedJson write_span(const ModelConfig& c) {
  const AdaptiveSpanConfig& s = c.adaptive_span;
  OrderedJson j;
  j["enabled"] = s.enabled;
  j["max_span"] = s.max_span;
  j["ramp"] = s.ramp;
  j["init_z"] = shortest_float(s.init_z);
  j["mode"] = enum_name(s.mode, kSpanModes, "adaptive_span.mode");
  j["dynamic"] = s.dynamic;
  j["loss_coeff"] = shortest_float(s.loss_coeff);
  j["distance"] = enum_name(s.distance, kSpanDistances, "adaptive_span.distance");
  return j;
}

void validate_span(const ModelConfig& c, const std::string& origin) {
  const AdaptiveSpanConfig& s = c.adaptive_span;
  if (s.max_span < 1)
    fail(origin, "adaptive_span.max_span must be >= 1 (a span in tokens), got " +
                     std::to_string(s.max_span));
  check_range(s.max_span, 1, int64_t(1) << 24, "adaptive_span.max_span", origin);
  if (s.ramp < 1)
    fail(origin, "adaptive_span.ramp must be >= 1 (the soft mask divides by it), got " +
                     std::to_string(s.ramp));
  check_range(s.ramp, 1, int64_t(1) << 24, "adaptive_span.ramp", origin);
  if (!(s.init_z >= 0.0f) || s.init_z > static_cast<float>(s.max_span))
    fail(origin, "adaptive_span.init_z must be in [0, max_span = " + std::to_string(s.max_span) +
                     "], got " + format_float(s.init_z));
  if (!(s.loss_coeff >= 0.0f))
    fail(origin, "adaptive_span.loss_coeff must be >= 0, got " + format_float(s.loss_coeff));
  if (s.enabled) reject_efficient_attention_combination(c, "adaptive_span.enabled", origin);
}

// ---- universal ----
const EnumTable<ActUpdate> kActUpdates = {{"interpolate", ActUpdate::Interpolate},
                                          {"weighted_sum", ActUpdate::WeightedSum}};
const std::vector<std::string> kUniversalKeys = {"enabled", "act", "max_steps", "epsilon",
                                                 "update", "halting_bias_init"};

void read_universal(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kUniversalKeys, "universal", r.origin);
  UniversalConfig& u = c.universal;
  if (auto it = o.find("enabled"); it != o.end()) u.enabled = r.boolean(*it, "universal.enabled");
  if (auto it = o.find("act"); it != o.end()) u.act = r.boolean(*it, "universal.act");
  if (auto it = o.find("max_steps"); it != o.end()) u.max_steps = r.integer(*it, "universal.max_steps");
  if (auto it = o.find("epsilon"); it != o.end()) u.epsilon = r.number(*it, "universal.epsilon");
  if (auto it = o.find("update"); it != o.end())
    u.update = r.enumeration(*it, "universal.update", kActUpdates);
  if (auto it = o.find("halting_bias_init"); it != o.end())
    u.halting_bias_init = r.number(*it, "universal.halting_bias_init");
}

OrderedJson write_universal(const ModelConfig& c) {
  const UniversalConfig& u = c.universal;
  OrderedJson j;
  j["enabled"] = u.enabled;
  j["act"] = u.act;
  j["max_steps"] = u.max_steps;
  j["epsilon"] = shortest_float(u.epsilon);
  j["update"] = enum_name(u.update, kActUpdates, "universal.update");
  j["halting_bias_init"] = shortest_float(u.halting_bias_init);
  return j;
}

void validate_universal(const ModelConfig& c, const std::string& origin) {
  const UniversalConfig& u = c.universal;
  if (u.max_steps < 1)
    fail(origin, "universal.max_steps (M) must be >= 1, got " + std::to_string(u.max_steps));
  check_range(u.max_steps, 1, 1024, "universal.max_steps", origin);
  if (!(u.epsilon > 0.0f && u.epsilon < 1.0f))
    fail(origin, "universal.epsilon must be in (0, 1) (halting threshold 1 - eps), got " +
                     format_float(u.epsilon));
  if (!u.enabled) return;
  if (c.architecture == Architecture::EncoderDecoder)
    fail(origin, "universal.enabled: the Universal Transformer is implemented for encoder-only "
                 "and decoder-only models; architecture is encoder-decoder");
  if (c.shaw.enabled || c.adaptive_span.enabled)
    fail(origin, "universal.enabled cannot be combined with shaw or adaptive_span");
  reject_efficient_attention_combination(c, "universal.enabled", origin);
  if (c.positional != Positional::Sinusoidal)
    fail(origin, "universal.enabled adds a sinusoidal position + time signal at every step; "
                 "set positional to \"sinusoidal\" (sinusoid_layout is honoured)");
}

// ---- xl ----
const std::vector<std::string> kXLKeys = {"enabled", "segment_length", "mem_len", "clamp_len",
                                          "same_length"};
constexpr int64_t kMaxXLLength = 65536;  // memory rows per layer; segment rows

void read_xl(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kXLKeys, "xl", r.origin);
  XLConfig& x = c.xl;
  if (auto it = o.find("enabled"); it != o.end()) x.enabled = r.boolean(*it, "xl.enabled");
  if (auto it = o.find("segment_length"); it != o.end())
    x.segment_length = r.integer(*it, "xl.segment_length");
  if (auto it = o.find("mem_len"); it != o.end()) x.mem_len = r.integer(*it, "xl.mem_len");
  if (auto it = o.find("clamp_len"); it != o.end()) x.clamp_len = r.integer(*it, "xl.clamp_len");
  if (auto it = o.find("same_length"); it != o.end()) x.same_length = r.boolean(*it, "xl.same_length");
}

OrderedJson write_xl(const ModelConfig& c) {
  const XLConfig& x = c.xl;
  OrderedJson j;
  j["enabled"] = x.enabled;
  j["segment_length"] = x.segment_length;
  j["mem_len"] = x.mem_len;
  j["clamp_len"] = x.clamp_len;
  j["same_length"] = x.same_length;
  return j;
}

void validate_xl(const ModelConfig& c, const std::string& origin) {
  const XLConfig& x = c.xl;
  if (x.segment_length < 1)
    fail(origin, "xl.segment_length must be >= 1 (tokens per segment), got " +
                     std::to_string(x.segment_length));
  check_range(x.segment_length, 1, kMaxXLLength, "xl.segment_length", origin);
  if (x.mem_len < 0)
    fail(origin, "xl.mem_len must be >= 0 (memory rows per layer; 0 = no memory), got " +
                     std::to_string(x.mem_len));
  check_range(x.mem_len, 0, kMaxXLLength, "xl.mem_len", origin);
  check_range(x.clamp_len, -1, kMaxXLLength, "xl.clamp_len", origin);
  if (!x.enabled) return;
  if (x.same_length && x.mem_len < 1)
    fail(origin, "xl.same_length lets each query see the last mem_len keys; it needs "
                 "xl.mem_len >= 1, got 0");
  if (c.architecture != Architecture::Decoder)
    fail(origin, "xl.enabled: Transformer-XL is implemented for decoder-only models");
  if (c.positional != Positional::None)
    fail(origin, "xl.enabled uses relative positions only; set positional to \"none\"");
  if (c.pad_id >= 0)
    fail(origin, "xl.enabled does not mask padding keys; set pad_id to -1");
  if (c.shaw.enabled || c.adaptive_span.enabled || c.universal.enabled)
    fail(origin, "xl.enabled cannot be combined with shaw, adaptive_span or universal");
  reject_efficient_attention_combination(c, "xl.enabled", origin);
}

// ---- gating (GTrXL) ----
const EnumTable<GateType> kGateTypes = {{"none", GateType::None},
                                        {"input", GateType::Input},
                                        {"output", GateType::Output},
                                        {"highway", GateType::Highway},
                                        {"gru", GateType::Gru}};
const std::vector<std::string> kGatingKeys = {"enabled", "type", "bias_init", "identity_map_reorder"};

void read_gating(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kGatingKeys, "gating", r.origin);
  GatingConfig& g = c.gating;
  if (auto it = o.find("enabled"); it != o.end()) g.enabled = r.boolean(*it, "gating.enabled");
  if (auto it = o.find("type"); it != o.end()) g.type = r.enumeration(*it, "gating.type", kGateTypes);
  if (auto it = o.find("bias_init"); it != o.end()) g.bias_init = r.number(*it, "gating.bias_init");
  if (auto it = o.find("identity_map_reorder"); it != o.end())
    g.identity_map_reorder = r.boolean(*it, "gating.identity_map_reorder");
}

OrderedJson write_gating(const ModelConfig& c) {
  const GatingConfig& g = c.gating;
  OrderedJson j;
  j["enabled"] = g.enabled;
  j["type"] = enum_name(g.type, kGateTypes, "gating.type");
  j["bias_init"] = shortest_float(g.bias_init);
  j["identity_map_reorder"] = g.identity_map_reorder;
  return j;
}

void validate_gating(const ModelConfig& c, const std::string& origin) {
  const GatingConfig& g = c.gating;
  // b_g > 0 starts the output, highway and GRU gates near the identity map (the paper's
  // point); a negative b_g would start them away from it. 100 already saturates a sigmoid.
  if (!(g.bias_init >= 0.0f && g.bias_init <= 100.0f))
    fail(origin, "gating.bias_init (b_g) must be in [0, 100] (b_g > 0 starts the gates near the "
                 "identity map; the paper uses 2), got " + format_float(g.bias_init));
  if (!g.enabled) return;
  if (!c.xl.enabled)
    fail(origin, "gating.enabled: GTrXL gates the sub-layers of Transformer-XL blocks; set "
                 "xl.enabled to true (the gating section is only valid together with xl)");
  if (g.identity_map_reorder && c.norm_position != NormPosition::Pre)
    fail(origin, "gating.identity_map_reorder puts layer norm on the sub-layer input only (TrXL-I); "
                 "set norm_position to \"pre\", or identity_map_reorder to false to gate a "
                 "post-norm block");
}

}  // namespace

std::vector<ConfigSection> relative_recurrent_sections() {
  return {{"shaw", read_shaw, write_shaw, validate_shaw},
          {"adaptive_span", read_span, write_span, validate_span},
          {"universal", read_universal, write_universal, validate_universal},
          {"xl", read_xl, write_xl, validate_xl},
          {"gating", read_gating, write_gating, validate_gating}};
}

}  // namespace atlas::config_json
