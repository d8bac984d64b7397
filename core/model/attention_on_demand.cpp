#include "core/model/attention_on_demand.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/backend/attention_rows.h"
#include "core/model/mechanism_module.h"
#include "core/model/stack_kind_module.h"
#include "core/tensor/error.h"

namespace atlas {

bool on_demand_maps_apply(const ModelConfig& c) {
  const StackKindModule* kind = stack_kind_module(c);  // core/model/stack_kind_module.h
  if (kind && !kind->maps_on_demand) return false;
  for (const AttentionMechanismModule* m : mechanisms_for(c))  // core/model/mechanism_module.h
    if (m->maps_on_demand && !m->maps_on_demand(c)) return false;
  return true;
}

bool maps_on_demand(const ModelConfig& c, const TraceOptions& t, int64_t source_len, int64_t target_len) {
  if (!t.attention || t.maps == MapStorage::Stored || !on_demand_maps_apply(c)) return false;
  if (t.maps == MapStorage::OnDemand) return true;
  const double S = double(source_len), T = double(target_len);
  const double enc = double(traced_encoder_layers(c)), dec = double(traced_decoder_layers(c));
  double cells = 0;
  if (c.architecture == Architecture::EncoderDecoder) cells = enc * S * S + dec * (T * T + T * S);
  else cells = (c.has_encoder() ? enc : dec) * S * S;
  return double(c.n_heads) * cells > kStoredMapCellsLimit;
}

OnDemandMap::OnDemandMap(const Trace& trace, const AttentionMap& m, bool own_copy)
    : heads_(m.heads), lq_(m.queries.count), lk_(m.keys.count), scale_(m.scale) {
  const TracedArray* q = trace.find(m.companions.q);
  const TracedArray* k = trace.find(m.companions.k);
  if (!m.on_demand || !q || !k)
    throw AtlasError(m.array + ": no queries and keys traced to compute the map from (" +
                     companion_array_name(m.array, Companion::Queries) + ", " +
                     companion_array_name(m.array, Companion::Keys) + ")");
  const Shape& qs = q->tensor.shape;
  const Shape& ks = k->tensor.shape;
  if (heads_ < 1 || qs.size() != 2 || ks.size() != 2 || qs[0] != lq_ || ks[0] != lk_ || qs[1] != ks[1] ||
      qs[1] % heads_ != 0 || !(std::isfinite(scale_)))
    throw AtlasError(m.array + ": queries [" + std::to_string(qs.empty() ? 0 : qs[0]) + ", ...] and keys [" +
                     std::to_string(ks.empty() ? 0 : ks[0]) + ", ...] do not fit the map's " +
                     std::to_string(heads_) + " heads, " + std::to_string(lq_) + " queries and " +
                     std::to_string(lk_) + " keys");
  if (own_copy) {
    own_q_.assign(q->tensor.data.begin(), q->tensor.data.end());
    own_k_.assign(k->tensor.data.begin(), k->tensor.data.end());
  }
  q_ = own_copy ? own_q_.data() : q->tensor.data.data();
  k_ = own_copy ? own_k_.data() : k->tensor.data.data();
  d_ = qs[1] / heads_;
  mask_.causal = m.causal;
  mask_.causal_offset = m.causal_offset;
  mask_.window = m.window;
  if (const TracedArray* valid = trace.find(m.companions.key_valid)) {
    if (valid->tensor.numel() != lk_)
      throw AtlasError(valid->name + " has " + std::to_string(valid->tensor.numel()) +
                       " entries for " + std::to_string(lk_) + " keys");
    for (float v : valid->tensor.data) mask_.key_valid.push_back(v != 0.0f ? 1 : 0);
  }
}

OnDemandMap::OnDemandMap(std::shared_ptr<const Trace> trace, const AttentionMap& m) : OnDemandMap(*trace, m) {
  owner_ = std::move(trace);
}

void OnDemandMap::block_weights(int64_t head, const KeyBlock& b, float* probs) const {
  auto one = [&](int64_t h, float* out) {
    attention_block(head_rows(q_, lq_, h, d_, heads_), head_rows(k_, lk_, h, d_, heads_), mask_, scale_, b, out);
  };
  if (head >= 0) return one(head, probs);
  const size_t n = size_t(b.rows * lk_);
  std::vector<float> each(n);
  for (int64_t h = 0; h < heads_; ++h) {
    one(h, h == 0 ? probs : each.data());
    if (h == 0) continue;
    for (size_t t = 0; t < n; ++t)
      probs[t] = head == kMeanOfHeads ? probs[t] + each[t] : std::max(probs[t], each[t]);
  }
  if (head == kMeanOfHeads)
    for (size_t t = 0; t < n; ++t) probs[t] /= float(heads_);
}

template <class F>
void OnDemandMap::for_each_block(int64_t head, int64_t r0, int64_t r1, F&& f) const {
  const bool head_ok = (head >= 0 && head < heads_) || head == kMeanOfHeads || head == kMaxOfHeads;
  if (!head_ok || r0 < 0 || r1 > lq_ || r0 > r1)
    throw AtlasError("on-demand map: head " + std::to_string(head) + " rows [" + std::to_string(r0) + ", " +
                     std::to_string(r1) + ") outside its " + std::to_string(heads_) + " heads and " +
                     std::to_string(lq_) + " rows");
  if (r0 == r1 || lk_ == 0) return;
  const std::vector<KeyBlock> all = attention_key_blocks(mask_, lq_, lk_);
  std::vector<KeyBlock> blocks;
  for (const KeyBlock& b : all)
    if (b.r0 < r1 && b.r0 + b.rows > r0) blocks.push_back(b);
  const auto n = static_cast<int64_t>(blocks.size());
#pragma omp parallel for num_threads(cpu_threads()) schedule(dynamic) if (n > 1)
  for (int64_t t = 0; t < n; ++t) {
    const KeyBlock& b = blocks[size_t(t)];
    std::vector<float> probs(size_t(b.rows * lk_));
    block_weights(head, b, probs.data());
    f(b, probs.data());
  }
}

std::vector<float> OnDemandMap::rows(int64_t head, int64_t r0, int64_t r1) const {
  return tile(head, r0, r1, 0, lk_);
}

std::vector<float> OnDemandMap::tile(int64_t head, int64_t r0, int64_t r1, int64_t c0, int64_t c1) const {
  if (c0 < 0 || c1 > lk_ || c0 > c1)
    throw AtlasError("on-demand map: keys [" + std::to_string(c0) + ", " + std::to_string(c1) +
                     ") outside its " + std::to_string(lk_) + " keys");
  const int64_t w = c1 - c0;
  std::vector<float> out(size_t(std::max<int64_t>(r1 - r0, 0) * w));
  for_each_block(head, r0, r1, [&](const KeyBlock& b, const float* probs) {
    for (int64_t i = std::max(b.r0, r0); i < std::min(b.r0 + b.rows, r1); ++i)
      std::copy(probs + (i - b.r0) * lk_ + c0, probs + (i - b.r0) * lk_ + c1, out.data() + (i - r0) * w);
  });
  return out;
}

std::vector<float> OnDemandMap::block_max(int64_t head, int64_t row_step, int64_t col_step,
                                          std::vector<uint8_t>* masked, std::vector<float>* first_key) const {
  std::vector<std::vector<float>> first;
  std::vector<std::vector<float>> out = pooled({head}, row_step, col_step, masked, first_key ? &first : nullptr);
  if (first_key) *first_key = std::move(first.at(0));
  return std::move(out.at(0));
}

std::vector<std::vector<float>> OnDemandMap::block_max_all(int64_t row_step, int64_t col_step,
                                                           std::vector<uint8_t>* masked,
                                                           std::vector<std::vector<float>>* first_keys) const {
  std::vector<int64_t> selectors;
  for (int64_t h = 0; h < heads_; ++h) selectors.push_back(h);
  selectors.push_back(kMeanOfHeads);
  selectors.push_back(kMaxOfHeads);
  return pooled(selectors, row_step, col_step, masked, first_keys);
}

std::vector<std::vector<float>> OnDemandMap::pooled(const std::vector<int64_t>& selectors, int64_t row_step,
                                                    int64_t col_step, std::vector<uint8_t>* masked,
                                                    std::vector<std::vector<float>>* first_keys) const {
  if (row_step < 1 || col_step < 1) throw AtlasError("on-demand map: block steps must be positive");
  // selectors is either one selector, or every head then the mean and the maximum.
  const size_t n = selectors.size();
  const bool every_head = n == size_t(heads_) + 2;
  const int64_t rows = (lq_ + row_step - 1) / row_step, cols = (lk_ + col_step - 1) / col_step;
  std::vector<std::vector<float>> out(n, std::vector<float>(size_t(rows * cols), 0.0f));
  std::vector<uint8_t> any_allowed(size_t(rows * cols), 0);
  if (first_keys) first_keys->assign(n, std::vector<float>(size_t(lq_), 0.0f));
  // Attention blocks and overview rows need not line up: blocks sharing an overview row write
  // it one after the other.
  std::vector<std::mutex> row_locks(static_cast<size_t>(rows));
  for_each_block(every_head ? 0 : selectors[0], 0, lq_, [&](const KeyBlock& b, const float* first) {
    // The block's weights per selector. Every head: each head computed once, the mean and the
    // maximum made from them as block_weights makes them (summed in head order, then divided).
    const size_t cells = size_t(b.rows * lk_);
    std::vector<std::vector<float>> more;
    std::vector<const float*> weights{first};
    if (every_head) {
      more.assign(size_t(heads_) + 1, std::vector<float>(cells));
      for (int64_t h = 1; h < heads_; ++h) {
        block_weights(h, b, more[size_t(h - 1)].data());
        weights.push_back(more[size_t(h - 1)].data());
      }
      float* mean = more[size_t(heads_ - 1)].data();
      float* most = more[size_t(heads_)].data();
      std::copy(first, first + cells, mean);
      std::copy(first, first + cells, most);
      for (int64_t h = 1; h < heads_; ++h)
        for (size_t t = 0; t < cells; ++t) {
          mean[t] += weights[size_t(h)][t];
          most[t] = std::max(most[t], weights[size_t(h)][t]);
        }
      for (size_t t = 0; t < cells; ++t) mean[t] /= float(heads_);
      weights.push_back(mean);
      weights.push_back(most);
    }
    for (int64_t i = b.r0; i < b.r0 + b.rows; ++i) {
      const int64_t r = i / row_step;
      std::lock_guard<std::mutex> lock(row_locks[size_t(r)]);
      uint8_t* a = any_allowed.data() + r * cols;
      const auto [lo, hi] = causal_span(mask_, i, lk_);
      for (size_t s = 0; s < n; ++s) {
        float* o = out[s].data() + r * cols;
        const float* p = weights[s] + (i - b.r0) * lk_;
        if (first_keys) (*first_keys)[s][size_t(i)] = p[0];
        for (int64_t j = lo; j < hi; ++j) {
          if (!mask_.key_valid.empty() && !mask_.key_valid[size_t(j)]) continue;
          const int64_t c = j / col_step;
          o[c] = std::max(o[c], p[j]);
          a[c] = 1;
        }
      }
    }
  });
  if (masked) {
    masked->resize(any_allowed.size());
    for (size_t t = 0; t < any_allowed.size(); ++t) (*masked)[t] = any_allowed[t] ? 0 : 1;
  }
  return out;
}

}  // namespace atlas
