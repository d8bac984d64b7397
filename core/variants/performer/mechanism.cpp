// Performer's FAVOR+ as an attention mechanism (core/model/mechanism_module.h): its implicit maps,
// of which a dense copy is traced only up to kDenseTraceLimit positions.
#include "core/model/mechanism_module.h"
#include "core/model/trace.h"  // kDenseTraceLimit

namespace atlas {

namespace {

bool performer_mechanism_used(const ModelConfig& c) { return c.performer() != nullptr; }

double performer_keys_per_query(const ModelConfig&, double L) {
  return L <= double(kDenseTraceLimit) ? L : 0.0;
}

const AttentionMechanismModule kPerformerMechanism{
    .name = "performer",
    .used_by = performer_mechanism_used,
    .maps_on_demand = never_on_demand,
    .keys_per_query = performer_keys_per_query,
    .sparse_map_kind = AttentionMapKind::Implicit,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> performer_mechanisms() { return {&kPerformerMechanism}; }
}  // namespace variants

}  // namespace atlas
