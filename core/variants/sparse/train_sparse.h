#pragma once
// A fixed sparse pattern on the training tape (core/train/train_model_impl.h): the engine's CSR
// pattern of each head of a layer (sparse_attention.h) as a dense [H, L, L] mask of the dense
// tape op; training lengths are short, and the op then needs no new backward.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/array_name_parts.h"  // layer_index_of
#include "core/variants/sparse/sparse_attention.h"

namespace atlas::train {

inline std::vector<uint8_t> sparse_allowed_mask(const ModelConfig& c, const std::string& prefix, int64_t L,
                                                bool causal, const std::vector<uint8_t>& key_valid) {
  AttentionMask mask;
  mask.causal = causal;
  mask.key_valid = key_valid;
  const std::vector<CsrPattern> heads =
      layer_patterns(*c.sparse(), L, layer_index_of(prefix), c.n_heads, mask);
  std::vector<uint8_t> allowed(size_t(c.n_heads * L * L), 0);
  for (size_t h = 0; h < heads.size(); ++h)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t n = heads[h].indptr[size_t(i)]; n < heads[h].indptr[size_t(i) + 1]; ++n)
        allowed[(h * size_t(L) + size_t(i)) * size_t(L) + size_t(heads[h].indices[size_t(n)])] = 1;
  return allowed;
}

}  // namespace atlas::train
