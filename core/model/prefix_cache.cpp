// Incremental forward for causal models: the cache and the splicing of traces (prefix_cache.h).
#include "core/model/prefix_cache.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/config/variant_choices.h"
#include "core/model/model.h"
#include "core/tensor/error.h"
#include "core/model/model_arrays.h"

namespace atlas {

bool incremental_forward_applies(const ModelConfig& c, const RunOptions& options) {
  return c.architecture == Architecture::Decoder && config_json::active_variants(c).empty() &&
         !options.trace.qk && !options.trace.value_norms && !options.hooks;
}

bool PrefixCache::Identity::same_as(const Identity& o) const {
  const bool same_weights = !weights.expired() && !weights.owner_before(o.weights) &&
                            !o.weights.owner_before(weights);
  return same_weights && backend == o.backend && pad_to == o.pad_to && trace == o.trace &&
         maps_on_demand == o.maps_on_demand;
}

int64_t PrefixCache::reused_tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reused_;
}

void PrefixCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  who_ = Identity{};
  ids_.clear();
  keys_ = Keys{};
  last_.reset();
  reused_ = 0;
}

PrefixCache::Reuse PrefixCache::reuse(const Identity& who, const std::vector<int32_t>& ids) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Reuse r;
  if (!last_ || ids.size() < 2 || !who.same_as(who_)) return r;
  const size_t limit = std::min(ids_.size(), ids.size() - 1);
  size_t n = 0;
  while (n < limit && ids[n] == ids_[n]) ++n;
  if (n == 0) return r;
  r.past = static_cast<int64_t>(n);
  r.keys = keys_;
  r.last = last_;
  return r;
}

void PrefixCache::store(Pending pending, std::shared_ptr<const RunResult> result) {
  std::lock_guard<std::mutex> lock(mutex_);
  who_ = std::move(pending.who);
  ids_ = std::move(pending.ids);
  keys_ = std::move(pending.keys);
  last_ = std::move(result);
  reused_ = pending.reused;
}

namespace {

// Arrays of a decoder-only trace that do not hold a row per token.
bool per_token_rows(const std::string& name) {
  return name != model_arrays::kPositionalFrequencies;
}

// Rows [0, past) of `cached` then every row of `fresh`, along the first dimension.
Tensor splice_rows(const Tensor& cached, const Tensor& fresh, int64_t past,
                   const std::string& name) {
  if (cached.shape.empty() || fresh.shape.empty() || cached.dim(0) < past ||
      !std::equal(cached.shape.begin() + 1, cached.shape.end(), fresh.shape.begin() + 1,
                  fresh.shape.end()))
    throw AtlasError("incremental forward: cached " + name + " " + shape_str(cached.shape) +
                     " does not continue with " + shape_str(fresh.shape));
  const int64_t row = cached.dim(0) == 0 ? 0 : cached.numel() / cached.dim(0);
  Tensor out;
  out.shape = fresh.shape;
  out.shape[0] = past + fresh.dim(0);
  out.data.reserve(static_cast<size_t>(out.shape[0] * row));
  out.data.assign(cached.data.begin(), cached.data.begin() + past * row);
  out.data.insert(out.data.end(), fresh.data.begin(), fresh.data.end());
  return out;
}

// [.., Lq, Lk] maps: the first `past` query rows from `cached` (its first `past` keys, the
// later keys filled with `masked`: a causal prefix row cannot see them), then `fresh`'s rows.
Tensor splice_attention(const Tensor& cached, const Tensor& fresh, int64_t past, float masked,
                        const std::string& name) {
  const size_t nd = fresh.shape.size();
  if (nd < 2 || cached.shape.size() != nd || cached.dim(nd - 2) < past ||
      cached.dim(nd - 1) < past)
    throw AtlasError("incremental forward: cached " + name + " " + shape_str(cached.shape) +
                     " does not continue with " + shape_str(fresh.shape));
  const int64_t lk = fresh.dim(nd - 1), lq_new = fresh.dim(nd - 2), lq = past + lq_new;
  const int64_t old_q = cached.dim(nd - 2), old_k = cached.dim(nd - 1);
  const int64_t maps = fresh.numel() / std::max<int64_t>(1, lq_new * lk);
  Tensor out;
  out.shape = fresh.shape;
  out.shape[nd - 2] = lq;
  out.data.assign(static_cast<size_t>(maps * lq * lk), masked);
  for (int64_t m = 0; m < maps; ++m) {
    float* dst = out.data.data() + m * lq * lk;
    const float* old = cached.data.data() + m * old_q * old_k;
    for (int64_t i = 0; i < past; ++i)
      std::copy(old + i * old_k, old + i * old_k + past, dst + i * lk);
    const float* add = fresh.data.data() + m * lq_new * lk;
    std::copy(add, add + lq_new * lk, dst + past * lk);
  }
  return out;
}

}  // namespace

RunResult splice_prefix(const RunResult& cached, RunResult fresh, int64_t past) {
  // From the catalogue (described, not yet finalised): attention probability arrays, and their
  // [.., Lq, Lk] companions.
  std::set<std::string> maps, scores, masks;
  for (const AttentionMap& m : fresh.trace.attention_maps) {
    maps.insert(m.array);
    const AttentionCompanions traced = traced_companions(fresh.trace, m.array);
    if (!traced.scores.empty()) scores.insert(traced.scores);
    if (!traced.mask.empty()) masks.insert(traced.mask);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (TracedArray& a : fresh.trace.arrays) {
    const TracedArray* old = cached.trace.find(a.name);
    if (!old) throw AtlasError("incremental forward: the cached run has no " + a.name);
    if (maps.count(a.name)) a.tensor = splice_attention(old->tensor, a.tensor, past, 0.0f, a.name);
    else if (scores.count(a.name))
      a.tensor = splice_attention(old->tensor, a.tensor, past, -inf, a.name);
    else if (masks.count(a.name))
      a.tensor = splice_attention(old->tensor, a.tensor, past, 0.0f, a.name);
    else if (per_token_rows(a.name))
      a.tensor = splice_rows(old->tensor, a.tensor, past, a.name);
  }
  fresh.output = splice_rows(cached.output, fresh.output, past, "output");
  return fresh;
}

}  // namespace atlas
