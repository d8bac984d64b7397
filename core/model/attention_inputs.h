#pragma once
// The queries, keys and values of one attention sub-layer, written once over an Executor
// (core/model/executor.h) for inference and training: the projections of seed 002, rotary
// positions on queries and keys (RoFormer, core/variants/rotary/rope.h), then grouped-query
// attention's repeat of each key/value head for its group of query heads (Llama 2).
#include <string>

#include "core/config/config.h"
#include "core/model/executor.h"

namespace atlas {

template <class Value>
struct AttentionInputs {
  Value q, k, v;  // [Lq, heads * d_head], [Lk, heads * d_head] twice
};

// q = xq Wq^T + bq, k = xkv Wk^T + bk, v = xkv Wv^T + bv from `prefix.{wq,bq,wk,bk,wv,bv}`.
// `rope_table` holds the angles of the queries' positions (rope_table in rope.h) when rotary
// positions apply (self-attention of a rotary model), else null; queries and keys are then the
// same positions. `before_repeat(k, v)` may replace the keys and values before the grouped-query
// repeat: inference puts a cached prefix's keys and values in front there (prefix_cache.h).
template <Executor E, class BeforeRepeat>
AttentionInputs<typename E::Value> attention_inputs(E& e, const ModelConfig& c,
                                                    const typename E::Value& xq,
                                                    const typename E::Value& xkv,
                                                    const std::string& prefix,
                                                    const typename E::RopeTable* rope_table,
                                                    BeforeRepeat&& before_repeat) {
  AttentionInputs<typename E::Value> in{
      e.linear(xq, e.weight(prefix + ".wq"), e.optional_weight(prefix + ".bq")),
      e.linear(xkv, e.weight(prefix + ".wk"), e.optional_weight(prefix + ".bk")),
      e.linear(xkv, e.weight(prefix + ".wv"), e.optional_weight(prefix + ".bv"))};
  if (rope_table) {
    RopeArgs a = rope_args(c);
    in.q = e.rope(in.q, *rope_table, a);
    a.heads = static_cast<int>(c.kv_heads());
    in.k = e.rope(in.k, *rope_table, a);
  }
  before_repeat(in.k, in.v);
  if (c.kv_heads() != c.n_heads) {  // each key/value head serves a group of query heads
    const int64_t groups = c.n_heads / c.kv_heads();
    in.k = e.repeat_heads(in.k, groups, c.d_head());
    in.v = e.repeat_heads(in.v, groups, c.d_head());
  }
  return in;
}

}  // namespace atlas
