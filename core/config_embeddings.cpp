// Config section "embeddings" (config_json.h, config_embeddings.h).
#include "config_embeddings.h"

#include "config_json.h"

namespace atlas::config_json {
namespace {

constexpr int64_t kMaxTokenTypes = 65536;

void read_embeddings(const Json& o, const Reader& r, ModelConfig& c) {
  check_known_keys(o, {"token_types", "norm"}, "embeddings", r.origin);
  if (auto it = o.find("token_types"); it != o.end())
    c.embeddings.token_types = r.integer(*it, "embeddings.token_types");
  if (auto it = o.find("norm"); it != o.end()) c.embeddings.norm = r.boolean(*it, "embeddings.norm");
}

OrderedJson write_embeddings(const ModelConfig& c) {
  OrderedJson j;
  j["token_types"] = c.embeddings.token_types;
  j["norm"] = c.embeddings.norm;
  return j;
}

void validate_embeddings(const ModelConfig& c, const std::string& origin) {
  check_range(c.embeddings.token_types, 0, kMaxTokenTypes, "embeddings.token_types", origin);
}

}  // namespace

std::vector<ConfigSection> embedding_sections() {
  return {{"embeddings", read_embeddings, write_embeddings, validate_embeddings}};
}

}  // namespace atlas::config_json
