#pragma once
// Incremental forward for causal models: the keys and values of the last run of a
// decoder-only model, kept so that the next run whose tokens start with the same ids computes
// only the tokens after the shared prefix. Typing at the end of a long text then costs the new
// tokens, not the whole text. The prefix's rows of every traced array are taken from the last
// run's trace, the new rows from the short forward: a causal token's rows do not depend on
// later tokens, so the result equals a full forward's (tests/core/test_prefix_cache.cpp).
//
// Pass one PrefixCache per input stream in RunOptions::prefix_cache (the app keeps one per
// window); Model::forward reuses it only when it applies (incremental_forward_applies) and the
// model, backend and trace options are those of the cached run, else it runs in full and
// refills the cache. The cache holds the last result: Model::forward_shared / run_shared share
// it with the caller, forward / run give the cache a copy.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/trace.h"

namespace atlas {

struct RunResult;
struct RunOptions;

// Decoder-only models whose attention is plain softmax attention over a causal mask (with RoPE,
// grouped-query heads, sliding windows, any norm or FFN): the variants whose rows depend on
// later tokens or on state beyond keys and values (XL memory, ACT, LSH buckets, sparse and
// Performer kernels, relative positions, adaptive spans, score functions) run in full.
// Tracing q and k (the score panel) runs in full too: its key array is not row-wise.
bool incremental_forward_applies(const ModelConfig& config, const RunOptions& options);

class PrefixCache {
 public:
  // Leading tokens the last run took from the cache (0: it ran in full).
  int64_t reused_tokens() const;
  void clear();

  // --- used by Model::forward -----------------------------------------------------------------
  // Per decoder layer, the keys and values (after RoPE, before grouped heads are repeated) of
  // every token of the cached run, as device tensors of the backend that made them.
  struct Keys {
    std::vector<DTensor> k, v;
  };
  struct Identity {
    std::weak_ptr<const void> weights;  // the model's uploaded weights on that backend
    uint64_t backend = 0;               // Backend::instance_id()
    TraceOptions trace;
    int64_t pad_to = 0;
    bool maps_on_demand = false;  // the run's maps were computed on request (maps_on_demand)
    bool same_as(const Identity& o) const;
  };
  // What a run with `who` over `ids` can take: `past` leading tokens (the common prefix with
  // the cached ids, at most ids.size() - 1: at least one token is computed), with the cached
  // keys and result. past = 0 when nothing applies.
  struct Reuse {
    int64_t past = 0;
    Keys keys;
    std::shared_ptr<const RunResult> last;
  };
  Reuse reuse(const Identity& who, const std::vector<int32_t>& ids) const;
  // What a run leaves for the cache, stored with the run's result once the caller holds it
  // (Model::forward_shared keeps that very result; Model::forward a copy).
  struct Pending {
    PrefixCache* cache = nullptr;  // null: the run did not use a cache
    Identity who;
    std::vector<int32_t> ids;
    Keys keys;
    int64_t reused = 0;
  };
  void store(Pending pending, std::shared_ptr<const RunResult> result);

 private:
  mutable std::mutex mutex_;
  Identity who_;
  std::vector<int32_t> ids_;
  Keys keys_;
  std::shared_ptr<const RunResult> last_;
  int64_t reused_ = 0;
};

// The full run's result from the cached run's result (`past` leading tokens) and the short
// forward's result over the remaining tokens: attention arrays (probabilities, scores, masks,
// [heads, Lq, Lk] or [Lq, Lk]) get the cached rows for the prefix, with the keys the prefix
// could not see filled as masked; every other row array is the cached rows then the new ones.
RunResult splice_prefix(const RunResult& cached, RunResult fresh, int64_t past);

}  // namespace atlas
