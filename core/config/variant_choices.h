#pragma once
// The variant choices a config makes, by name, and the one compatibility table that says which
// of them cannot be combined. Two stack kinds never meet here: the stack is one choice held as
// a type (core/config/stack_kind.h). A module's own requirements on the rest of the config (an
// architecture, a norm position) stay with the module's config section.
#include <string>
#include <vector>

#include "core/config/config.h"

namespace atlas::config_json {

// "shaw", "adaptive_span", "xl", "universal", "lsh", "performer", "sparse", "score_function",
// "rnn_seq2seq", "ntm", "sagan", "snail", "patches": the ones this config turns on ("lsh" also
// for reversible layers without LSH attention).
std::vector<std::string> active_variants(const ModelConfig& c);

// Fails naming the first pair of chosen options the compatibility table excludes, both by their
// config keys: "positional \"rotary\" cannot be combined with xl.enabled (...)". Run by
// validate_config after every section's own checks.
void check_compatibility(const ModelConfig& c, const std::string& origin);

}  // namespace atlas::config_json
