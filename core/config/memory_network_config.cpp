// Config sections "ntm", "sagan" and "snail" (see config_json.h and memory_network_config.h). Keys are
// documented in docs/variants.md.
#include "core/config/config_json.h"

namespace atlas::config_json {

namespace {

const std::vector<std::string> kNtmKeys = {"enabled",    "memory_slots", "memory_width",
                                           "controller_size", "read_heads", "write_heads",
                                           "shift_range"};

void read_ntm(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kNtmKeys, "ntm", r.origin);
  NtmConfig& n = c.ntm;
  if (auto it = o.find("enabled"); it != o.end()) n.enabled = r.boolean(*it, "ntm.enabled");
  if (auto it = o.find("memory_slots"); it != o.end()) n.memory_slots = r.integer(*it, "ntm.memory_slots");
  if (auto it = o.find("memory_width"); it != o.end()) n.memory_width = r.integer(*it, "ntm.memory_width");
  if (auto it = o.find("controller_size"); it != o.end())
    n.controller_size = r.integer(*it, "ntm.controller_size");
  if (auto it = o.find("read_heads"); it != o.end()) n.read_heads = r.integer(*it, "ntm.read_heads");
  if (auto it = o.find("write_heads"); it != o.end()) n.write_heads = r.integer(*it, "ntm.write_heads");
  if (auto it = o.find("shift_range"); it != o.end()) n.shift_range = r.integer(*it, "ntm.shift_range");
}

OrderedJson write_ntm(const ModelConfig& c) {
  const NtmConfig& n = c.ntm;
  OrderedJson j;
  j["enabled"] = n.enabled;
  j["memory_slots"] = n.memory_slots;
  j["memory_width"] = n.memory_width;
  j["controller_size"] = n.controller_size;
  j["read_heads"] = n.read_heads;
  j["write_heads"] = n.write_heads;
  j["shift_range"] = n.shift_range;
  return j;
}

void validate_ntm(const ModelConfig& c, const std::string& origin) {
  const NtmConfig& n = c.ntm;
  check_range(n.memory_slots, 1, 4096, "ntm.memory_slots", origin);
  check_range(n.memory_width, 1, 1024, "ntm.memory_width", origin);
  check_range(n.controller_size, 1, 4096, "ntm.controller_size", origin);
  check_range(n.read_heads, 1, 16, "ntm.read_heads", origin);
  check_range(n.write_heads, 0, 16, "ntm.write_heads", origin);
  // 2R + 1 <= N: larger kernels would wrap onto themselves and count an offset twice.
  if (n.shift_range < 0 || 2 * n.shift_range + 1 > n.memory_slots)
    fail(origin, "ntm.shift_range must be in [0, (memory_slots - 1) / 2] = [0, " +
                     std::to_string((n.memory_slots - 1) / 2) + "], got " + std::to_string(n.shift_range));
  if (!n.enabled) return;
  if (c.architecture != Architecture::Decoder)
    fail(origin, "ntm.enabled runs one step per token of one sequence; it needs architecture "
                 "\"decoder\"");
  if (c.universal.enabled || c.xl.enabled || c.shaw.enabled || c.adaptive_span.enabled ||
      c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled ||
      c.rnn_seq2seq.enabled)
    fail(origin, "ntm.enabled replaces the Transformer stack; it cannot be combined with "
                 "universal, xl, shaw, adaptive_span, sparse, lsh, performer or rnn_seq2seq");
}

// ---- sagan ----
const std::vector<std::string> kSaganKeys = {"enabled", "channels", "image_size", "pool_keys", "gamma"};

void read_sagan(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kSaganKeys, "sagan", r.origin);
  SaganConfig& s = c.sagan;
  if (auto it = o.find("enabled"); it != o.end()) s.enabled = r.boolean(*it, "sagan.enabled");
  if (auto it = o.find("channels"); it != o.end()) s.channels = r.integer(*it, "sagan.channels");
  if (auto it = o.find("image_size"); it != o.end()) s.image_size = r.integer(*it, "sagan.image_size");
  if (auto it = o.find("pool_keys"); it != o.end()) s.pool_keys = r.boolean(*it, "sagan.pool_keys");
  if (auto it = o.find("gamma"); it != o.end()) s.gamma = r.number(*it, "sagan.gamma");
}

OrderedJson write_sagan(const ModelConfig& c) {
  OrderedJson j;
  j["enabled"] = c.sagan.enabled;
  j["channels"] = c.sagan.channels;
  j["image_size"] = c.sagan.image_size;
  j["pool_keys"] = c.sagan.pool_keys;
  j["gamma"] = shortest_float(c.sagan.gamma);
  return j;
}

void validate_sagan(const ModelConfig& c, const std::string& origin) {
  check_range(c.sagan.channels, 8, 1024, "sagan.channels", origin);
  // 64 x 64 locations = a 4096 x 4096 attention matrix (64 MB): the most a view can hold.
  check_range(c.sagan.image_size, 2, 64, "sagan.image_size", origin);
  if (!c.sagan.enabled) return;
  if (c.architecture != Architecture::Encoder)
    fail(origin, "sagan.enabled attends over image locations without a mask; it needs "
                 "architecture \"encoder\"");
  if (c.universal.enabled || c.xl.enabled || c.shaw.enabled || c.adaptive_span.enabled ||
      c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled ||
      c.rnn_seq2seq.enabled || c.ntm.enabled)
    fail(origin, "sagan.enabled replaces the Transformer stack; it cannot be combined with "
                 "another variant (universal, xl, shaw, adaptive_span, sparse, lsh, performer, "
                 "rnn_seq2seq, ntm)");
}

// ---- snail ----
const std::vector<std::string> kSnailKeys = {"enabled",    "length",    "filters",        "key_size",
                                             "value_size", "tc_blocks", "paper_dilations"};

void read_snail(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, kSnailKeys, "snail", r.origin);
  SnailConfig& s = c.snail;
  if (auto it = o.find("enabled"); it != o.end()) s.enabled = r.boolean(*it, "snail.enabled");
  if (auto it = o.find("length"); it != o.end()) s.length = r.integer(*it, "snail.length");
  if (auto it = o.find("filters"); it != o.end()) s.filters = r.integer(*it, "snail.filters");
  if (auto it = o.find("key_size"); it != o.end()) s.key_size = r.integer(*it, "snail.key_size");
  if (auto it = o.find("value_size"); it != o.end()) s.value_size = r.integer(*it, "snail.value_size");
  if (auto it = o.find("tc_blocks"); it != o.end()) s.tc_blocks = r.integer(*it, "snail.tc_blocks");
  if (auto it = o.find("paper_dilations"); it != o.end())
    s.paper_dilations = r.boolean(*it, "snail.paper_dilations");
}

OrderedJson write_snail(const ModelConfig& c) {
  const SnailConfig& s = c.snail;
  OrderedJson j;
  j["enabled"] = s.enabled;
  j["length"] = s.length;
  j["filters"] = s.filters;
  j["key_size"] = s.key_size;
  j["value_size"] = s.value_size;
  j["tc_blocks"] = s.tc_blocks;
  j["paper_dilations"] = s.paper_dilations;
  return j;
}

void validate_snail(const ModelConfig& c, const std::string& origin) {
  const SnailConfig& s = c.snail;
  check_range(s.length, 1, 4096, "snail.length", origin);
  check_range(s.filters, 1, 1024, "snail.filters", origin);
  check_range(s.key_size, 1, 1024, "snail.key_size", origin);
  check_range(s.value_size, 1, 1024, "snail.value_size", origin);
  check_range(s.tc_blocks, 0, 8, "snail.tc_blocks", origin);
  if (!s.enabled) return;
  if (c.architecture != Architecture::Decoder)
    fail(origin, "snail.enabled is causal (convolutions and attention never read the future); it "
                 "needs architecture \"decoder\"");
  if (s.length > c.max_positions)
    fail(origin, "snail.length " + std::to_string(s.length) + " exceeds max_positions " +
                     std::to_string(c.max_positions));
  if (c.universal.enabled || c.xl.enabled || c.shaw.enabled || c.adaptive_span.enabled ||
      c.sparse.enabled() || c.lsh.enabled || c.lsh.reversible || c.performer.enabled ||
      c.rnn_seq2seq.enabled || c.ntm.enabled || c.sagan.enabled)
    fail(origin, "snail.enabled replaces the Transformer stack; it cannot be combined with "
                 "another variant (universal, xl, shaw, adaptive_span, sparse, lsh, performer, "
                 "rnn_seq2seq, ntm, sagan)");
}

}  // namespace

std::vector<ConfigSection> memory_network_sections() {
  return {{"ntm", read_ntm, write_ntm, validate_ntm},
          {"sagan", read_sagan, write_sagan, validate_sagan},
          {"snail", read_snail, write_snail, validate_snail}};
}

}  // namespace atlas::config_json
