#pragma once
// Which mechanism computes an attention sub-layer: the one rule that the inference forward
// and the training forward both dispatch on (core/model/attention_sublayer.h, written once), so
// they cannot disagree about where a variant applies. The config's attention kind acts on
// self-attention only, except a score function, which replaces the scores of every sub-layer
// (seed 004); cross-attention is otherwise plain scaled dot-product softmax.
#include "core/config/config.h"

namespace atlas {

enum class AttentionMechanism {
  Softmax,        // scaled dot-product softmax (seed 002), the dense kernel
  Relative,       // softmax with Shaw's relations and / or the adaptive span mask
  SparsePattern,  // a fixed sparse pattern (Sparse Transformer, local 1D / 2D)
  Lsh,            // Reformer's hashed buckets
  Performer,      // FAVOR+ random features
  ScoreFunction,  // seed 004's score functions other than scaled dot
};

AttentionMechanism attention_mechanism(const ModelConfig& c, bool self_attention);

// SparsePattern, Lsh and Performer: nothing of size Lq x Lk is formed densely at inference
// (sparse_attention_layer, core/variants/sparse/sparse_attention.h).
inline bool is_sparse_mechanism(AttentionMechanism m) {
  return m == AttentionMechanism::SparsePattern || m == AttentionMechanism::Lsh ||
         m == AttentionMechanism::Performer;
}

}  // namespace atlas
