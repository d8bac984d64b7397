#pragma once
// The variant choices a config makes, by name, and the one compatibility table that says which
// of them cannot be combined: each variant folder brings its rows (VariantChoice,
// core/config/config_json.h, in core/variants/<m>/<name>_config.cpp), core/config its options'.
// Two stack kinds or two attention kinds never meet there: each is one choice held as a type
// (core/config/stack_kind.h, attention_kind.h); the parser refuses a second one with the table's
// reason for the pair. A module's own requirements on the rest of the config (an architecture, a
// norm position) stay with the module's config section.
#include <string>
#include <vector>

#include "core/config/config.h"

namespace atlas::config_json {

// The choices of the group "variant" this config makes ("shaw", "xl", "reversible", "patches",
// ...), in table order.
std::vector<std::string> active_variants(const ModelConfig& c);

// Fails naming the first pair of chosen options the compatibility table excludes, both by their
// config keys: "positional \"rotary\" cannot be combined with xl.enabled (...)". Run by
// validate_config after every section's own checks.
void check_compatibility(const ModelConfig& c, const std::string& origin);

// Makes `kind` the config's attention, chosen as the table's choice `name` ("sparse", "lsh",
// "performer", "score_function": the group "attention"); when another kind was chosen
// already, fails naming both config keys with the table's reason (the attention is one choice).
void choose_attention(ModelConfig& c, AttentionKind kind, const std::string& name,
                      const std::string& origin);
// The config's softmax attention, for Shaw or the adaptive span (choice `name`) to join; fails
// as choose_attention when another kind was chosen.
SoftmaxAttention& softmax_attention_for(ModelConfig& c, const std::string& name,
                                        const std::string& origin);

}  // namespace atlas::config_json
