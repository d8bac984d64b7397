#pragma once
// Softmax attention over each head's CSR pattern only (sparse_attention.h has the equation), a
// module op (core/backend/module_op.h) whose host reference is block_sparse_attention (dense
// tiles over row groups, block_sparse_attention.h; checked against the one-dot-per-nonzero loop
// sparse_attention) and whose Vulkan kernels are gpu/variants/sparse/vk_sparse_attention.cpp.
// O(nnz d) work, nothing of size Lq x Lk.
#include <vector>

#include "core/backend/backend.h"
#include "core/variants/sparse/sparse_pattern.h"

namespace atlas {

struct ModuleOp;

// The op's arguments other than tensors. `patterns` (one CSR per head) is the caller's and is
// read only during the call.
struct SparseOpArgs {
  int heads = 1;
  float scale = 1.0f;
  const std::vector<CsrPattern>* patterns = nullptr;
  bool want_probs = false;
};

struct SparseAttentionResult {
  DTensor out;    // [Lq, heads * d_value]
  DTensor probs;  // [sum_h nnz_h] when asked: head h's probabilities, aligned with its CSR
                  // indices, start at sum_{g < h} nnz_g
};

// The attention on `be`: q [Lq, H*dh], k [Lk, H*dh], v [Lk, H*dv], one [Lq, Lk] pattern per head
// (shapes and patterns checked first, the same message on every backend). A row without
// nonzeros gives a zero output.
SparseAttentionResult sparse_attention(Backend& be, const DTensor& q, const DTensor& k,
                                       const DTensor& v, int heads, float scale,
                                       const std::vector<CsrPattern>& patterns, bool want_probs);

// The backend op "sparse_attention" with arguments SparseOpArgs: inputs {q, k, v}; outputs {out,
// then probs when want_probs}.
const ModuleOp& sparse_attention_op();

}  // namespace atlas
