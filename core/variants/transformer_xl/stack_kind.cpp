// Transformer-XL (with GTrXL's gates when set) as a stack kind (core/model/stack_kind_module.h):
// segments with memory, relative attention of its own, and the gates' parameters and lines.
#include <algorithm>

#include "core/model/stack_kind_module.h"
#include "core/variants/gtrxl/gtrxl.h"
#include "core/variants/transformer_xl/transformer_xl.h"

namespace atlas {

namespace {

bool xl_stack_used(const ModelConfig& c) { return c.xl() != nullptr; }

void describe_gtrxl_gates(const ModelConfig& c, std::ostream& s) {
  if (!c.gating()) return;
  const char* gates[] = {"none (residual x + y)", "input", "output", "highway", "GRU"};
  s << "GTrXL gates: " << gates[int(c.gating()->type)] << ", b_g init " << c.gating()->bias_init
    << (c.gating()->identity_map_reorder ? ", identity-map reordering (TrXL-I)" : "") << "\n";
}

void append_xl_stack_specs(std::vector<ParamSpec>& specs, const ModelConfig& c) {
  append_xl_specs(specs, c);  // u, v, W_kR (transformer_xl.cpp)
  if (c.gating()) append_gtrxl_specs(specs, c);  // GTrXL gates (gtrxl.cpp)
}

// GTrXL: d x d gate maps per sub-layer (core/variants/gtrxl/gtrxl.cpp).
double gtrxl_gate_flops(const ModelConfig& c, double l) {
  if (!c.gating()) return 0.0;
  const double d = double(c.d_model);
  const double maps = c.gating()->type == GateType::Gru ? 6 : c.gating()->type == GateType::None ? 0 : 1;
  return double(2 * c.n_layers) * maps * 2 * l * d * d;
}

int64_t xl_forward_layers(const ModelConfig& c, int64_t source_len) {
  return xl_segments(c, source_len) * c.n_layers;
}

// A query sees its segment and the memory before it.
double xl_keys_per_query(const ModelConfig& c, double L) {
  return std::min(L, double(c.xl()->segment_length + c.xl()->mem_len));
}

const StackKindModule kXlStackKind{
    .name = "xl",
    .used_by = xl_stack_used,
    .has_route = true,
    .route = StackRoute::Xl,
    .describe_tail = describe_gtrxl_gates,
    .append_param_specs = append_xl_stack_specs,
    .extra_flops = gtrxl_gate_flops,
    .forward_layers = xl_forward_layers,
    .keys_per_query = xl_keys_per_query,
    .maps_on_demand = false,
    .own_attention = true,
    .layer_stack = false,
    // hidden states are traced per segment (decoder.seg<s>.layer<i>.hidden)
    .no_logit_lens = "the logit lens is not available for Transformer-XL models (xl.enabled)",
};

}  // namespace

namespace variants {
std::vector<const StackKindModule*> transformer_xl_stack_kinds() { return {&kXlStackKind}; }
}  // namespace variants

}  // namespace atlas
