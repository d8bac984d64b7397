#pragma once
// Softmax attention computed only over a sparse pattern's nonzeros:
//   out_i = sum_{j in S_h(i)} softmax_{j in S_h(i)}(scale q_i . k_j) v_j   per head h
// O(nnz d) work and O(nnz) memory; S_h(i) comes from sparse_pattern.h as CSR, never dense.
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/model/trace.h"
#include "core/tensor/tensor.h"
#include "core/variants/sparse/sparse_attention_op.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas {

class ForwardPass;

// The host reference, one dot product per nonzero: q [L, H*dh], k [L, H*dh], v [L, H*dv] ->
// [L, H*dv]. patterns: one CSR per head. A query with no key gets a zero output (as the dense
// backend does for fully masked rows). probs (optional): per head, the probabilities aligned
// with that head's CSR indices. Runs use block_sparse_attention (block_sparse_attention.h), the
// same sums in dense tiles; this loop is what the backend-ops harness checks them against.
Tensor sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v, int heads, float scale,
                        const std::vector<CsrPattern>& patterns,
                        std::vector<std::vector<float>>* probs = nullptr);

// Row i of head h by its nonzeros, the reference's loop body (also block_sparse_attention's for
// groups too sparse for a tile): q, k, v as above (host data, heads side by side), out_row the
// row's [d_v] output (added to), probs (optional) the head's probabilities by CSR position;
// scores is scratch.
void sparse_attention_row(const float* q, const float* k, const float* v, int64_t heads, int64_t dk, int64_t dv,
                          float scale, const CsrPattern& pattern, int64_t h, int64_t i, float* out_row,
                          float* probs, std::vector<float>& scores);

// Throws AtlasError unless q, k, v fit `heads` heads and there is one [Lq, Lk] pattern per head
// with Lq + 1 row pointers running from 0 to its nonzeros, naming the mismatch; shared by the
// host references and the module op (sparse_attention_op.h), so by every backend. (Indices are
// the generator's, layer_patterns; the Vulkan kernel checks them as it copies them.)
void check_sparse_attention_shapes(const Shape& q, const Shape& k, const Shape& v, int heads,
                                   const std::vector<CsrPattern>& patterns);

// The pattern of every head of one self-attention layer at length L, intersected with the
// mask's causal and padding constraints (mask.causal selects the causal pattern variants).
std::vector<CsrPattern> layer_patterns(const SparseConfig& s, int64_t length, int64_t layer,
                                       int64_t n_heads, const AttentionMask& mask);

// The inference kernel of the sparse-pattern mechanism (mechanism.cpp, core/model/attention_kernel.h): attention of q, k, v (device tensors, [L, H*dh]) under
// the config's pattern, traced as `traced_name.{indptr,indices,values,allowed}` (+ the dense
// `traced_name` and `.mask` when sparse_dense_copy_traced). Returns [L, H*dv] before W_o.
DTensor sparse_attention_layer(ForwardPass& fp, const DTensor& q, const DTensor& k,
                               const DTensor& v, const std::string& prefix,
                               const std::string& traced_name, const AttentionMask& mask);

// Trace arrays hold integers in float32, exact only below 2^24: a layer whose union of head
// patterns has this many nonzeros or more traces no CSR arrays.
constexpr int64_t kMaxTracedIndex = int64_t(1) << 24;

// A sparse layer's dense copy [heads, L, L] (and its [L, L] mask) is traced beside its CSR arrays
// only while it stays within kDenseTraceCells cells (64 MB: 8 heads up to L 1448, one head up to
// 4096). Views and dumps read the CSR arrays; beyond that the copies are mostly zeros, and a
// 30-layer model at 4096 tokens held 15 GB of them.
constexpr int64_t kDenseTraceCells = int64_t(1) << 24;
inline bool sparse_dense_copy_traced(int64_t heads, int64_t length) {
  return length <= kDenseTraceLimit && heads * length * length <= kDenseTraceCells;
}

// Records per-head sparse probabilities (one CSR + probs per head) as
// `<name>.indptr/.indices/.values/.allowed` over the union of the heads' patterns (`.allowed`
// only when the heads' patterns differ: with one pattern every nonzero is every head's), plus the
// dense `<name>` (with_values) and `<name>.mask` (with_mask) when sparse_dense_copy_traced.
void trace_sparse_attention(Trace& trace, const std::string& name,
                            const std::vector<CsrPattern>& heads,
                            const std::vector<std::vector<float>>& probs, bool with_values,
                            bool with_mask);

}  // namespace atlas
