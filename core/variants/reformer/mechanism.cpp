// Reformer's LSH attention as an attention mechanism (core/model/mechanism_module.h): its CSR
// trace in the memory budget, its host op, and the positions a chunk needs.
#include <algorithm>
#include <cmath>

#include "core/model/mechanism_module.h"
#include "core/variants/reformer/lsh_attention.h"  // lsh_attention_layer
#include "core/variants/reformer/train_lsh.h"
#include "core/variants/sparse/sparse_attention.h"  // sparse_dense_copy_traced

namespace atlas {

namespace {

bool lsh_mechanism_used(const ModelConfig& c) { return c.lsh() != nullptr; }

double lsh_keys_per_query(const ModelConfig& c, double L) {
  return sparse_dense_copy_traced(c.n_heads, int64_t(L)) ? L : 0.0;
}

// About 2 sqrt(L) + 16 keys per query (a few buckets' chunks), its heads hashing apart.
SparseNonzeros lsh_nonzeros(const ModelConfig&, int64_t L) {
  SparseNonzeros n;
  n.union_bound = n.largest_head = double(L) * std::min(double(L), 2.0 * std::ceil(std::sqrt(double(L))) + 16);
  n.heads_differ = true;
  return n;
}

// A chunk of keys fits in the positions.
int64_t lsh_min_positions(const ModelConfig& c) { return c.lsh()->chunk_length; }

// The kernels: LSH attention on the host (lsh_attention.cpp; keys are the shared-QK queries)
// and its dense form on the tape (train_lsh.h).
DTensor lsh_backend_kernel(const BackendKernelCall& a) {
  return lsh_attention_layer(a.pass, a.q, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int lsh_tape_kernel(const TapeKernelCall<S>& a) {
  return train::lsh_tape_attention(a.tape, a.config, a.q, a.v, a.prefix, std::move(a.spec));
}

const AttentionKernel kLshKernel{
    .backend = lsh_backend_kernel,
    .tape_float = lsh_tape_kernel<float>,
    .tape_double = lsh_tape_kernel<double>,
    .sparse_maps = true,
};

const AttentionMechanismModule kLshMechanism{
    .name = "lsh",
    .used_by = lsh_mechanism_used,
    .kernel = &kLshKernel,
    .maps_on_demand = never_on_demand,
    .keys_per_query = lsh_keys_per_query,
    .sparse_nonzeros = lsh_nonzeros,
    .host_op = Op::LshAttention,
    .min_positions = lsh_min_positions,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> reformer_mechanisms() { return {&kLshMechanism}; }
}  // namespace variants

}  // namespace atlas
