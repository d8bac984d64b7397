// Seed 004's score functions as an attention mechanism (core/model/mechanism_module.h): their
// line in `atlas info`; their maps are computed on demand only for scaled dot.
#include "core/model/mechanism_module.h"
#include "core/variants/score_functions/score_functions.h"

namespace atlas {

namespace {

bool score_mechanism_used(const ModelConfig& c) { return c.score() != nullptr; }

void describe_score_function(const ModelConfig& c, std::ostream& s) {
  s << "score function: " << score_function_name(c.score_function().function) << "\n";
}

bool score_maps_on_demand(const ModelConfig& c) { return !score_function_applies(c); }

const AttentionMechanismModule kScoreMechanism{
    .name = "score_function",
    .used_by = score_mechanism_used,
    .describe = describe_score_function,
    .maps_on_demand = score_maps_on_demand,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> score_functions_mechanisms() { return {&kScoreMechanism}; }
}  // namespace variants

}  // namespace atlas
