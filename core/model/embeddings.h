#pragma once
// The input embeddings, written once over an Executor (core/model/executor.h) for inference and
// training: token rows (unit rows first with FixNorm, Nguyen & Chiang 2018) times sqrt(d_model)
// with scale_embedding (seed 000 §3.4), then the absolute positions, BERT's token-type rows and
// BERT's embedding norm (add_positions, shared with a ViT's patch embeddings).
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/model/executor.h"
#include "core/model/positional.h"
#include "core/model/transformer_block.h"

namespace atlas {

// The token rows' scale: sqrt(d_model) with scale_embedding, else 1.
inline float token_scale(const ModelConfig& c) {
  return c.scale_embedding ? std::sqrt(static_cast<float>(c.d_model)) : 1.0f;
}

// embed.tokens [vocab, d_model], unit rows with FixNorm. Models that embed several times (the
// segments of Transformer-XL) take it once.
template <Executor E>
typename E::Value token_table(E& e, const ModelConfig& c) {
  typename E::Value table = e.weight("embed.tokens");
  if (c.fixnorm) table = e.row_normalize(table, 1e-5f);
  return table;
}

// ids [L] -> [L, d_model] rows of embed.tokens.
template <Executor E>
typename E::Value embed_tokens(E& e, const ModelConfig& c, const std::vector<int32_t>& ids) {
  return e.embedding(token_table(e, c), ids, token_scale(c));
}

// x [L, d] + the positions first .. first + L - 1: the sinusoid table (seed 000 §3.5) or the
// learned rows of embed.positions (positions on queries and keys add nothing here:
// core/model/qk_positions.h);
// + the rows of embed.token_types of `types` when the config has token types (`types` empty:
// every token is type 0; the caller has checked them, ForwardPass naming the token); then
// embed.norm when the config has one. `positions(rows)` sees the
// positional rows added, a host Tensor (sinusoid) or a Value (learned), for the trace.
template <Executor E, class SeePositions>
typename E::Value add_positions(E& e, const ModelConfig& c, typename E::Value x, int64_t length,
                                int64_t first, const std::vector<int32_t>& types,
                                SeePositions&& positions) {
  if (c.positional == Positional::Sinusoidal) {
    Tensor pe = sinusoid_table(length, c.d_model, c.sinusoid_layout, first);
    x = e.add(x, e.constant(pe));
    positions(std::move(pe));
  } else if (c.positional == Positional::Learned) {
    std::vector<int32_t> pos(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i)
      pos[static_cast<size_t>(i)] = static_cast<int32_t>(first + i);
    const typename E::Value pe = e.embedding(e.weight("embed.positions"), pos, 1.0f);
    positions(pe);
    x = e.add(x, pe);
  }
  if (c.embeddings.token_types > 0) {  // BERT segment embeddings
    std::vector<int32_t> rows = types;
    if (rows.empty()) rows.assign(static_cast<size_t>(length), 0);
    x = e.add(x, e.embedding(e.weight("embed.token_types"), rows, 1.0f));
  }
  if (c.embeddings.norm) x = apply_norm(e, c, x, "embed.norm");  // BERT's embeddings.LayerNorm
  return x;
}

}  // namespace atlas
