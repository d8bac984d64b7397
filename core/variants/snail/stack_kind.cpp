// SNAIL as a stack kind (core/model/stack_kind_module.h): a model of its own on the host, causal
// TC blocks between attention blocks.
#include "core/model/stack_kind_module.h"
#include "core/variants/snail/snail_model.h"

namespace atlas {

namespace {

bool snail_stack_used(const ModelConfig& c) { return c.snail() != nullptr; }

void describe_snail(const ModelConfig& c, std::ostream& s) {  // core/variants/snail/snail_model.cpp
  s << "SNAIL: " << c.snail()->tc_blocks << " TC blocks (D " << c.snail()->filters << ", T " << c.snail()->length
    << (c.snail()->paper_dilations ? ", paper dilations" : "") << ") between " << c.snail()->tc_blocks + 1
    << " causal attention blocks (K " << c.snail()->key_size << ", V " << c.snail()->value_size << ") on "
    << c.d_model << "-channel embeddings\n";
}

RunResult snail_host_forward(const ModelConfig& c, const ParamStore& params,
                             const std::vector<TokenInfo>& source, const std::vector<TokenInfo>&,
                             const RunOptions& options) {
  return snail_model_forward(c, params, source, options);
}

const HostModelKind kSnailHostModel{
    .param_specs = snail_param_specs, .forward = snail_host_forward, .untrainable = "SNAIL"};

const StackKindModule kSnailStackKind{
    .name = "snail",
    .used_by = snail_stack_used,
    .host = &kSnailHostModel,
    .has_route = true,
    .route = StackRoute::HostModel,
    .describe_tail = describe_snail,
    .maps_on_demand = false,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> snail_stack_kinds() { return {&kSnailStackKind}; }
}  // namespace variants

}  // namespace atlas
