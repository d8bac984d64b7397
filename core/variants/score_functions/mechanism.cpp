// Seed 004's score functions as an attention mechanism (core/model/mechanism_module.h): their
// line in `atlas info`; their maps are computed on demand only for scaled dot.
#include "core/model/mechanism_module.h"
#include "core/variants/score_functions/train_score.h"
#include "core/variants/score_functions/score_functions.h"

namespace atlas {

namespace {

bool score_mechanism_used(const ModelConfig& c) { return c.score() != nullptr; }

void describe_score_function(const ModelConfig& c, std::ostream& s) {
  s << "score function: " << score_function_name(c.score_function().function) << "\n";
}

bool score_maps_on_demand(const ModelConfig& c) { return !score_function_applies(c); }

// The kernels, on every attention sub-layer: the module op `score_attention`
// (score_functions.cpp) and the tape's (train_score.h).
DTensor score_backend_kernel(const BackendKernelCall& a) {
  return score_function_attention(a.pass, a.q, a.k, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int score_tape_kernel(const TapeKernelCall<S>& a) {
  return train::score_function_tape_attention(a.tape, a.config, a.q, a.k, a.v, a.prefix,
                                              std::move(a.spec), a.weight);
}

const AttentionKernel kScoreKernel{
    .backend = score_backend_kernel,
    .tape_float = score_tape_kernel<float>,
    .tape_double = score_tape_kernel<double>,
    .cross_attention = true,
};

const AttentionMechanismModule kScoreMechanism{
    .name = "score_function",
    .used_by = score_mechanism_used,
    .kernel = &kScoreKernel,
    .describe = describe_score_function,
    .maps_on_demand = score_maps_on_demand,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> score_functions_mechanisms() { return {&kScoreMechanism}; }
}  // namespace variants

}  // namespace atlas
