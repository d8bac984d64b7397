#pragma once
// Which mechanism computes an attention sub-layer: the one rule that the inference forward
// and the training forward both dispatch on (core/model/attention_sublayer.h, written once), so
// they cannot disagree about where a variant applies. A mechanism acts on self-attention only,
// unless its kernel computes cross-attention too (a score function replaces the scores of every
// sub-layer, seed 004); cross-attention is otherwise plain scaled dot-product softmax.
#include "core/config/config.h"
#include "core/model/mechanism_module.h"

namespace atlas {

// The entry (core/model/mechanism_module.h) whose kernel computes a sub-layer of config c, or
// nullptr: the executors' own softmax kernel. The first entry the config uses whose kernel
// claims the sub-layer; entries sharing a kernel (Shaw, the adaptive span) agree, and two
// kernels for one sub-layer are an internal error (the compatibility table keeps them apart).
const AttentionMechanismModule* attention_mechanism(const ModelConfig& c, bool self_attention);

// Whether a sub-layer's mechanism forms nothing of size Lq x Lk densely (sparse patterns, LSH,
// Performer): its maps are traced as its entry's sparse_map_kind, and no dense mask.
inline bool is_sparse_mechanism(const AttentionMechanismModule* m) {
  return m && m->kernel->sparse_maps;
}

}  // namespace atlas
