#pragma once
// The variant choices a config makes, by name, so that a module states what it cannot be
// combined with as a list of names (its row of the compatibility table) instead of reading
// every other variant's flags itself.
#include <string>
#include <vector>

#include "core/config/config.h"

namespace atlas::config_json {

// "shaw", "adaptive_span", "xl", "universal", "lsh", "performer", "sparse", "score_function",
// "rnn_seq2seq", "ntm", "sagan", "snail", "patches": the ones this config turns on.
std::vector<std::string> active_variants(const ModelConfig& c);

// Fails naming `what` and the first active variant listed in `incompatible`:
// "positional \"rotary\" cannot be combined with xl".
void refuse_combinations(const ModelConfig& c, const std::string& what,
                         const std::vector<std::string>& incompatible, const std::string& origin);

}  // namespace atlas::config_json
