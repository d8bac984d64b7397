// The Neural Turing Machine as a stack kind (core/model/stack_kind_module.h): a model of its own
// on the host, one step per token.
#include "core/model/stack_kind_module.h"
#include "core/variants/ntm/ntm_model.h"

namespace atlas {

namespace {

bool ntm_stack_used(const ModelConfig& c) { return c.ntm() != nullptr; }

void describe_ntm(const ModelConfig& c, std::ostream& s) {  // core/variants/ntm/ntm_model.cpp
  s << "Neural Turing Machine: memory " << c.ntm()->memory_slots << " x " << c.ntm()->memory_width << ", "
    << c.ntm()->read_heads << " read / " << c.ntm()->write_heads << " write heads, shifts -" << c.ntm()->shift_range
    << "..+" << c.ntm()->shift_range << ", feed-forward controller " << c.ntm()->controller_size << "\n";
}

RunResult ntm_host_forward(const ModelConfig& c, const ParamStore& params,
                           const std::vector<TokenInfo>& source, const std::vector<TokenInfo>&,
                           const RunOptions& options) {
  return ntm_forward(c, params, source, options);
}

const HostModelKind kNtmHostModel{
    .param_specs = ntm_param_specs, .forward = ntm_host_forward, .untrainable = "the Neural Turing Machine"};

const StackKindModule kNtmStackKind{
    .name = "ntm",
    .used_by = ntm_stack_used,
    .host = &kNtmHostModel,
    .has_route = true,
    .route = StackRoute::HostModel,
    .describe_tail = describe_ntm,
    .maps_on_demand = false,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> ntm_stack_kinds() { return {&kNtmStackKind}; }
}  // namespace variants

}  // namespace atlas
