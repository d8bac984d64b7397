// Config sections "ntm", "sagan" and "snail" (see config_json.h and memory_network_config.h). Keys are
// documented in docs/variants.md.
#include "core/config/config_json.h"
#include "core/config/field_table.h"

namespace atlas::config_json {

namespace {

// ---- ntm ----
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

// ---- sagan ----
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

// ---- snail ----
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

std::vector<ConfigSection> memory_network_sections() {
  return {stack_section("ntm", &kNtmFields, ntm_combinations),
          stack_section("sagan", &kSaganFields, sagan_combinations),
          stack_section("snail", &kSnailFields, snail_combinations)};
}

}  // namespace atlas::config_json
