// Fixed sparse patterns (Sparse Transformer, local 1D / 2D) as an attention mechanism
// (core/model/mechanism_module.h): their CSR trace in the memory budget, and the pixel grid of a
// local 2D model reading images.
#include <algorithm>

#include "core/model/mechanism_module.h"
#include "core/train/train_tape.h"
#include "core/variants/sparse/sparse_attention.h"  // sparse_dense_copy_traced, kMaxTracedIndex
#include "core/variants/sparse/sparse_pattern.h"
#include "core/variants/sparse/train_sparse.h"

namespace atlas {

namespace {

bool sparse_pattern_used(const ModelConfig& c) { return c.sparse() != nullptr; }

// The dense copy of a layer's maps is traced only while it stays small.
double sparse_pattern_keys_per_query(const ModelConfig& c, double L) {
  return sparse_dense_copy_traced(c.n_heads, int64_t(L)) ? L : 0.0;
}

// Bounded by the sum over the distinct head patterns of layer 0 (exact counts, sparse_pattern.h),
// and the largest head's (the union has at least that many).
SparseNonzeros sparse_pattern_nonzeros(const ModelConfig& c, int64_t L) {
  SparseNonzeros n;
  const bool causal = c.architecture == Architecture::Decoder;
  std::vector<std::string> seen;  // recipes of the head patterns counted (as layer_patterns shares them)
  for (int64_t h = 0; h < c.n_heads; ++h) {
    const PatternRows rows(*c.sparse(), L, 0, h, causal);
    std::string recipe = rows.recipe();
    if (std::find(seen.begin(), seen.end(), recipe) != seen.end()) continue;
    seen.push_back(std::move(recipe));
    const double nnz = double(pattern_stats(rows).nnz);
    n.union_bound += nnz;
    n.largest_head = std::max(n.largest_head, nnz);
  }
  n.union_bound = std::min(n.union_bound, double(L) * double(L));
  n.heads_differ = seen.size() > 1;
  return n;
}

std::string sparse_pattern_untraced_reason(const ModelConfig& c, int64_t source_len) {
  const SparseNonzeros n = sparse_pattern_nonzeros(c, source_len);
  if (n.largest_head < double(kMaxTracedIndex)) return "";
  return "its sparse maps at " + std::to_string(source_len) + " tokens have " +
         std::to_string(int64_t(n.largest_head)) + " nonzeros in one head, more than a trace can index (" +
         std::to_string(kMaxTracedIndex) + "): none recorded; shorter inputs show them";
}

// A local 2D pattern over image rows of image_width bytes.
std::optional<PixelGrid> sparse_pattern_pixel_grid(const ModelConfig& c) {
  if (c.sparse()->pattern != SparsePattern::Local2D) return std::nullopt;
  return PixelGrid{c.sparse()->image_channels, c.sparse()->image_width};
}

// The kernels: the module op `sparse_attention` (sparse_attention.cpp, CSR) and, on the tape,
// dense softmax attention under the pattern's mask (train_sparse.h).
DTensor sparse_backend_kernel(const BackendKernelCall& a) {
  return sparse_attention_layer(a.pass, a.q, a.k, a.v, a.prefix, a.traced_name, a.mask);
}

template <class S>
int sparse_tape_kernel(const TapeKernelCall<S>& a) {
  const int64_t lq = a.tape.value(a.q).rows();
  a.spec.head_allowed = train::sparse_allowed_mask(a.config, a.prefix, lq, a.spec.causal, a.spec.key_valid);
  return a.tape.attention(a.q, a.k, a.v, std::move(a.spec));
}

const AttentionKernel kSparseKernel{
    .backend = sparse_backend_kernel,
    .tape_float = sparse_tape_kernel<float>,
    .tape_double = sparse_tape_kernel<double>,
    .sparse_maps = true,
};

const AttentionMechanismModule kSparsePatternMechanism{
    .name = "sparse",
    .used_by = sparse_pattern_used,
    .kernel = &kSparseKernel,
    .maps_on_demand = never_on_demand,
    .keys_per_query = sparse_pattern_keys_per_query,
    .sparse_nonzeros = sparse_pattern_nonzeros,
    .untraced_maps_reason = sparse_pattern_untraced_reason,
    .pixel_grid = sparse_pattern_pixel_grid,
};

}  // namespace

namespace variants {
std::vector<const AttentionMechanismModule*> sparse_mechanisms() { return {&kSparsePatternMechanism}; }
}  // namespace variants

}  // namespace atlas
