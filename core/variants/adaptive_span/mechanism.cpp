// The adaptive span as an attention mechanism (core/model/mechanism_module.h): its maps are not
// computed on demand (the on-demand rows know no span mask), and training refuses it beside
// Shaw's relations.
#include "core/model/mechanism_module.h"
#include "core/variants/relative_attention/relative_kernel.h"

namespace atlas {

namespace {

bool adaptive_span_mechanism_used(const ModelConfig& c) { return c.adaptive_span() != nullptr; }

const char* adaptive_span_untrainable(const ModelConfig& c) {
  return c.shaw() ? "Shaw relative positions together with adaptive span" : nullptr;
}

const AttentionMechanismModule kAdaptiveSpanMechanism{
    .name = "adaptive_span",
    .used_by = adaptive_span_mechanism_used,
    .kernel = &kRelativeAttentionKernel,
    .maps_on_demand = never_on_demand,
    .untrainable = adaptive_span_untrainable,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> adaptive_span_mechanisms() { return {&kAdaptiveSpanMechanism}; }
}  // namespace variants

}  // namespace atlas
