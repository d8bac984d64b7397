// Reformer's reversible stack as a stack kind (core/model/stack_kind_module.h): the standard
// stacks' loop, each layer plain or reversible inside it (core/model/standard_stacks.h).
#include "core/model/stack_kind_module.h"
#include "core/variants/reformer/lsh_attention.h"

namespace atlas {

namespace {

bool reversible_stack_used(const ModelConfig& c) { return c.reversible() != nullptr; }

const StackKindModule kReversibleStackKind{
    .name = "reversible",
    .used_by = reversible_stack_used,
    .layer_stack = false,  // its layers recompute their inputs from their outputs
    .reversible_layers = reversible_stack,
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> reformer_stack_kinds() { return {&kReversibleStackKind}; }
}  // namespace variants

}  // namespace atlas
