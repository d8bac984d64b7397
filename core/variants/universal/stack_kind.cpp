// The Universal Transformer as a stack kind (core/model/stack_kind_module.h): one shared block
// applied up to max_steps times, each step traced as a layer row.
#include "core/model/stack_kind_module.h"
#include "core/variants/universal/universal.h"

namespace atlas {

namespace {

bool universal_stack_used(const ModelConfig& c) { return c.universal() != nullptr; }

int64_t universal_steps(const ModelConfig& c) { return c.universal()->max_steps; }

int64_t universal_forward_layers(const ModelConfig& c, int64_t) { return c.universal()->max_steps; }

const StackKindModule kUniversalStackKind{
    .name = "universal",
    .used_by = universal_stack_used,
    .has_route = true,
    .route = StackRoute::Universal,
    .append_param_specs = append_universal_specs,  // the shared block (universal.cpp)
    .traced_depth = universal_steps,
    .forward_layers = universal_forward_layers,
    .shared_block = "universal",
    .layer_stack = false,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> universal_stack_kinds() { return {&kUniversalStackKind}; }
}  // namespace variants

}  // namespace atlas
