#pragma once
// Attention maps computed on request. A full-attention map holds heads x Lq x Lk weights (4 GB
// per layer at 16k tokens and 4 heads), so above a size budget a run traces, per layer, the
// queries and keys it attended with (after RoPE, key heads repeated for grouped-query attention)
// and the mask's rule instead of the maps (AttentionMap::on_demand). Any head's rows, tile or
// overview are computed from them here with the forward's own block routine
// (core/backend/attention_rows.h), so they equal what a run storing the maps holds, bit for bit.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend/attention_rows.h"
#include "core/backend/backend.h"
#include "core/config/config.h"
#include "core/model/trace.h"

namespace atlas {

// MapStorage::Auto computes a run's full-attention maps on request when they would hold more
// than this many weights in all (2^28, 1 GiB of float32). GPT-2-small keeps its maps up to
// 1024 tokens.
constexpr double kStoredMapCellsLimit = double(int64_t(1) << 28);

// Whether the config's attention can be computed on request: scaled dot-product softmax
// attention under a causal / sliding-window / padding mask (with RoPE and grouped-query heads).
// Sparse, LSH, Performer, Shaw, adaptive-span, score-function and Transformer-XL attention keep
// their own storage.
bool on_demand_maps_apply(const ModelConfig& c);
// Whether a run over `source_len` (and `target_len` decoder) tokens computes its maps on
// request: MapStorage::OnDemand, or Auto above kStoredMapCellsLimit, when the config allows it.
bool maps_on_demand(const ModelConfig& c, const TraceOptions& t, int64_t source_len, int64_t target_len);

class OnDemandMap {
 public:
  // Head selectors besides a head index: every head's weights averaged (summed in head order,
  // then divided, as the views average stored maps), or their maximum.
  static constexpr int64_t kMeanOfHeads = -1, kMaxOfHeads = -2;

  // Throws AtlasError naming what is missing or mis-shaped when the trace does not hold the
  // queries and keys `m` describes. With `own_copy` the queries and keys are copied, so the map
  // outlives the trace (a view keeping it); otherwise the trace must outlive it.
  OnDemandMap(const Trace& trace, const AttentionMap& m, bool own_copy = false);
  // Reads the trace's queries and keys in place and keeps the trace alive (views sharing one
  // run's trace, without a copy per view).
  OnDemandMap(std::shared_ptr<const Trace> trace, const AttentionMap& m);
  int64_t heads() const { return heads_; }
  int64_t queries() const { return lq_; }
  int64_t keys() const { return lk_; }
  bool allowed(int64_t query, int64_t key) const { return mask_.is_allowed(query, key, lk_); }

  // `head` is a head index or kMeanOfHeads / kMaxOfHeads throughout.
  // Rows [r0, r1) of one head over every key: [r1 - r0, Lk], row-major.
  std::vector<float> rows(int64_t head, int64_t r0, int64_t r1) const;
  // The cells [r0, r1) x [c0, c1): [r1 - r0, c1 - c0], row-major.
  std::vector<float> tile(int64_t head, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const;
  // Block maxima over blocks of row_step x col_step cells (the last ones cut at the edge):
  // [ceil(Lq / row_step), ceil(Lk / col_step)]. One pass over the whole head; `masked` (when
  // given) receives 1 where every cell of the block is masked, `first_key` (when given) the
  // weight of every row on key 0 [Lq] (the attention sink, read in the same pass).
  std::vector<float> block_max(int64_t head, int64_t row_step, int64_t col_step,
                               std::vector<uint8_t>* masked = nullptr,
                               std::vector<float>* first_key = nullptr) const;
  // The block maxima of every head, then of the head mean and of the head maximum, in one pass
  // (heads + 2 overviews, each as block_max gives it); first_keys[h] as block_max's first_key.
  std::vector<std::vector<float>> block_max_all(int64_t row_step, int64_t col_step, std::vector<uint8_t>* masked,
                                                std::vector<std::vector<float>>* first_keys) const;

 private:
  // Calls f(block, probs [block.rows, Lk]) for every block of attention_key_blocks holding a
  // row in [r0, r1), blocks in parallel (f must only write what its block owns).
  template <class F>
  void for_each_block(int64_t head, int64_t r0, int64_t r1, F&& f) const;


  // Block maxima of `selectors`: one head index / kMeanOfHeads / kMaxOfHeads, or every head
  // followed by the mean and the maximum (block_max_all).
  std::vector<std::vector<float>> pooled(const std::vector<int64_t>& selectors, int64_t row_step, int64_t col_step,
                                         std::vector<uint8_t>* masked,
                                         std::vector<std::vector<float>>* first_keys) const;
  // Block b's weights of `head` (an index, kMeanOfHeads or kMaxOfHeads) into probs [b.rows, Lk].
  void block_weights(int64_t head, const KeyBlock& b, float* probs) const;

  std::vector<float> own_q_, own_k_;
  std::shared_ptr<const Trace> owner_;
  const float *q_ = nullptr, *k_ = nullptr;
  int64_t heads_ = 0, lq_ = 0, lk_ = 0, d_ = 0;
  float scale_ = 0.0f;
  AttentionMask mask_;
};

}  // namespace atlas
