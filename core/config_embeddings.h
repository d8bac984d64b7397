#pragma once
// Embedding-layer options of BERT-style encoders (issue 7), read by config_embeddings.cpp from
// the nested "embeddings" object: {"embeddings": {"token_types": 2, "norm": true}}.
// Documented in docs/model-format.md.
#include <cstdint>

namespace atlas {

struct EmbeddingOptions {
  // Rows of the token-type (segment) embedding added to every token (BERT: 2); 0 = none.
  // A token's row is TokenInfo::type.
  int64_t token_types = 0;
  // Normalise the summed embeddings (BERT's embeddings.LayerNorm), tensors embed.norm.*.
  bool norm = false;
};

}  // namespace atlas
