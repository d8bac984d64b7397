#pragma once
// Performer FAVOR+ attention of all heads (seed 003), a module op (core/backend/module_op.h)
// whose host reference is favor_attention and positive_features (core/variants/performer/
// performer.h) head by head and whose Vulkan kernel is gpu/variants/performer/vk_performer.cpp.
// q [Lq, H*dk], k [Lk, H*dk], v [Lk, H*dv], features [H, m, dk] each head's orthogonal random
// features w_r. phi(x)_r = m^-1/2 exp(w_r . x' - |x'|^2 / 2), x' = x / dk^(1/4), shifted by the
// row's largest projection for queries and by the largest over all keys for keys (shifts
// cancel in the ratio); keys with key_valid 0 get phi = 0. out_i = sum_j (phi(q_i) . phi(k_j))
// v_j / sum_j phi(q_i) . phi(k_j) over j <= i when causal (0 when the sum is 0).
#include <cstdint>
#include <vector>

#include "core/backend/backend.h"

namespace atlas {

struct ModuleOp;

struct PerformerArgs {
  int heads = 1;
  bool causal = false;
  std::vector<uint8_t> key_valid;  // [Lk] or empty
  bool want_implicit = false;      // the implicit attention [H, Lq, Lk]
};

struct PerformerResult {
  DTensor out;       // [Lq, H*dv]
  DTensor implicit;  // rownorm(phi(Q) phi(K)^T), causal: lower triangle, when asked
};

// The attention on `be` (shapes checked first, the same message on every backend).
PerformerResult performer_attention(Backend& be, const DTensor& q, const DTensor& k,
                                    const DTensor& v, const DTensor& features,
                                    const PerformerArgs& args);

// The backend op "performer_attention" with arguments PerformerArgs: inputs {q, k, v,
// features}, outputs {out, then implicit when want_implicit}.
const ModuleOp& performer_attention_op();

// Throws AtlasError naming the mismatch.
void check_performer_shapes(const Shape& q, const Shape& k, const Shape& v, const Shape& features,
                            const PerformerArgs& args);

}  // namespace atlas
