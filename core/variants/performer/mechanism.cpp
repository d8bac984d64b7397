// Performer's FAVOR+ as an attention mechanism (core/model/mechanism_module.h): its implicit maps,
// of which a dense copy is traced only up to kDenseTraceLimit positions.
#include "core/model/mechanism_module.h"
#include "core/variants/performer/performer.h"  // performer_attention_layer
#include "core/variants/performer/train_performer.h"
#include "core/model/trace.h"  // kDenseTraceLimit

namespace atlas {

namespace {

bool performer_mechanism_used(const ModelConfig& c) { return c.performer() != nullptr; }

double performer_keys_per_query(const ModelConfig&, double L) {
  return L <= double(kDenseTraceLimit) ? L : 0.0;
}

// The kernels: the module op `performer_attention` (performer.cpp) and the tape's implicit
// attention with the same features (train_performer.h).
DTensor performer_backend_kernel(const BackendKernelCall& a) {
  return performer_attention_layer(a.pass, a.q, a.k, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int performer_tape_kernel(const TapeKernelCall<S>& a) {
  return train::performer_attention(a.tape, a.q, a.k, a.v, a.config, a.prefix, a.spec);
}

const AttentionKernel kPerformerKernel{
    .backend = performer_backend_kernel,
    .tape_float = performer_tape_kernel<float>,
    .tape_double = performer_tape_kernel<double>,
    .sparse_maps = true,
};

const AttentionMechanismModule kPerformerMechanism{
    .name = "performer",
    .used_by = performer_mechanism_used,
    .kernel = &kPerformerKernel,
    .maps_on_demand = never_on_demand,
    .keys_per_query = performer_keys_per_query,
    .sparse_map_kind = AttentionMapKind::Implicit,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> performer_mechanisms() { return {&kPerformerMechanism}; }
}  // namespace variants

}  // namespace atlas
