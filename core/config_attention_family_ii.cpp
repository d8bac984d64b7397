// Config sections "ntm" and "sagan" (see config_json.h and config_attention_family_ii.h). Keys are
// documented in docs/variants.md.
#include "config_json.h"

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

}  // namespace

std::vector<ConfigSection> attention_family_ii_sections() {
  return {{"ntm", read_ntm, write_ntm, validate_ntm},
          {"sagan", read_sagan, write_sagan, validate_sagan}};
}

}  // namespace atlas::config_json
