// Shaw's relative positions as an attention mechanism (core/model/mechanism_module.h): their
// maps are not computed on demand (the on-demand rows know no relation tables).
#include "core/model/mechanism_module.h"
#include "core/variants/relative_attention/relative_kernel.h"

namespace atlas {

namespace {

bool shaw_mechanism_used(const ModelConfig& c) { return c.shaw() != nullptr; }

const AttentionMechanismModule kShawMechanism{
    .name = "shaw",
    .used_by = shaw_mechanism_used,
    .kernel = &kRelativeAttentionKernel,
    .maps_on_demand = never_on_demand,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> shaw_mechanisms() { return {&kShawMechanism}; }
}  // namespace variants

}  // namespace atlas
