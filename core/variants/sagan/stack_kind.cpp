// The Self-Attention GAN block as a stack kind (core/model/stack_kind_module.h): a model of its
// own on the host, run on the built-in test card (the text is unused).
#include "core/model/stack_kind_module.h"
#include "core/variants/sagan/sagan.h"

namespace atlas {

namespace {

bool sagan_stack_used(const ModelConfig& c) { return c.sagan() != nullptr; }

void describe_sagan(const ModelConfig& c, std::ostream& s) {  // core/variants/sagan/sagan.cpp
  s << "Self-Attention GAN block: " << c.sagan()->channels << " channels on " << c.sagan()->image_size << " x "
    << c.sagan()->image_size << " locations" << (c.sagan()->pool_keys ? ", 2x2-pooled keys/values" : "")
    << ", gamma " << c.sagan()->gamma << "\n";
}

RunResult sagan_host_forward(const ModelConfig& c, const ParamStore& params,
                             const std::vector<TokenInfo>&, const std::vector<TokenInfo>&,
                             const RunOptions& options) {
  return sagan_forward(c, params, sagan_synthetic_image(c.sagan()->image_size), options);
}

const HostModelKind kSaganHostModel{
    .param_specs = sagan_param_specs, .forward = sagan_host_forward, .untrainable = "the Self-Attention GAN block"};

const StackKindModule kSaganStackKind{
    .name = "sagan",
    .used_by = sagan_stack_used,
    .host = &kSaganHostModel,
    .has_route = true,
    .route = StackRoute::HostModel,
    .describe_tail = describe_sagan,
    .maps_on_demand = false,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> sagan_stack_kinds() { return {&kSaganStackKind}; }
}  // namespace variants

}  // namespace atlas
