#pragma once
// The queries, keys and values of one attention sub-layer, written once over an Executor
// (core/model/executor.h) for inference and training: the projections of seed 002, positions
// on queries and keys where the config's scheme acts there (core/model/qk_positions.h), then
// grouped-query attention's repeat of each key/value head for its group of query heads (Llama 2).
#include <string>

#include "core/config/config.h"
#include "core/model/executor.h"

namespace atlas {

template <class Value>
struct AttentionInputs {
  Value q, k, v;  // [Lq, heads * d_head], [Lk, heads * d_head] twice
};

// q = xq Wq^T + bq, k = xkv Wk^T + bk, v = xkv Wv^T + bv from `prefix.{wq,bq,wk,bk,wv,bv}`.
// `positions(x, heads)` returns the queries (then the keys) with their positions applied, or x
// itself where none apply (cross-attention, positions added to the embeddings); queries and keys
// are then the same positions. `before_repeat(k, v)` may replace the keys and values before the
// grouped-query repeat: inference puts a cached prefix's keys and values in front there
// (prefix_cache.h).
template <Executor E, class Positions, class BeforeRepeat>
AttentionInputs<typename E::Value> attention_inputs(
    E& e, const ModelConfig& c, const typename E::Value& xq, const typename E::Value& xkv,
    const std::string& prefix, Positions&& positions, BeforeRepeat&& before_repeat) {
  AttentionInputs<typename E::Value> in{
      e.linear(xq, e.weight(prefix + ".wq"), e.optional_weight(prefix + ".bq")),
      e.linear(xkv, e.weight(prefix + ".wk"), e.optional_weight(prefix + ".bk")),
      e.linear(xkv, e.weight(prefix + ".wv"), e.optional_weight(prefix + ".bv"))};
  in.q = positions(in.q, static_cast<int>(c.n_heads));
  in.k = positions(in.k, static_cast<int>(c.kv_heads()));
  before_repeat(in.k, in.v);
  if (c.kv_heads() != c.n_heads) {  // each key/value head serves a group of query heads
    const int64_t groups = c.n_heads / c.kv_heads();
    in.k = e.repeat_heads(in.k, groups, c.d_head());
    in.v = e.repeat_heads(in.v, groups, c.d_head());
  }
  return in;
}

}  // namespace atlas
