#include "core/config/variant_choices.h"

#include <algorithm>

#include "core/config/config_json.h"

namespace atlas::config_json {

std::vector<std::string> active_variants(const ModelConfig& c) {
  const std::pair<bool, const char*> choices[] = {
      {c.shaw.enabled, "shaw"},
      {c.adaptive_span.enabled, "adaptive_span"},
      {c.xl.enabled, "xl"},
      {c.universal.enabled, "universal"},
      {c.lsh.enabled || c.lsh.reversible, "lsh"},
      {c.performer.enabled, "performer"},
      {c.sparse.enabled(), "sparse"},
      {c.score.function != ScoreFunction::ScaledDot, "score_function"},
      {c.rnn_seq2seq.enabled, "rnn_seq2seq"},
      {c.ntm.enabled, "ntm"},
      {c.sagan.enabled, "sagan"},
      {c.snail.enabled, "snail"},
      {c.embeddings.patches.enabled(), "patches"},
  };
  std::vector<std::string> on;
  for (const auto& [enabled, name] : choices)
    if (enabled) on.push_back(name);
  return on;
}

void refuse_combinations(const ModelConfig& c, const std::string& what,
                         const std::vector<std::string>& incompatible, const std::string& origin) {
  for (const std::string& v : active_variants(c))
    if (std::find(incompatible.begin(), incompatible.end(), v) != incompatible.end())
      fail(origin, what + " cannot be combined with " + v);
}

}  // namespace atlas::config_json
