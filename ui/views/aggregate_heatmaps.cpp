#include "ui/views/aggregate_heatmaps.h"

#include <cmath>

#include "core/analysis/attention_flow.h"
#include "core/analysis/attention_rollout.h"
#include "core/analysis/value_weighted.h"
#include "core/tensor/error.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/map_matrix.h"

namespace atlas::ui {

std::vector<std::vector<float>> attentionRolloutPrefixes(const std::vector<std::vector<float>>& layers,
                                                         int n) {
  // Abnar & Zuidema (2020), "Quantifying Attention Flow in Transformers": the residual
  // connection is modelled by mixing each layer's (head-averaged) attention with the identity,
  // A' = rownorm(0.5 A + 0.5 I), and attention is propagated through the stack by the matrix
  // product R_l = A'_l R_{l-1}, R_0 = A'_0. Row i of R_l says how much of layer l's output at
  // position i traces back to each input token.
  std::vector<std::vector<float>> out;
  Mat r;  // [n, n] rollout so far
  for (size_t l = 0; l < layers.size(); ++l) {
    const Tensor mixed = residual_mix(layers[l].data(), n);
    const Mat a = mixed.mat();
    r = l == 0 ? a : Mat(a * r);
    out.emplace_back(r.data(), r.data() + r.size());
  }
  return out;
}

std::vector<float> attentionRollout(const std::vector<std::vector<float>>& layers, int n) {
  auto all = attentionRolloutPrefixes(layers, n);
  return all.empty() ? std::vector<float>{} : std::move(all.back());
}

namespace {

// "decoder self-attention, segment 1" (+ ", " for what follows): a family within one segment.
QString familyTitle(const AttentionFamily& f, int segment) {
  return f.segments > 0 ? QString("%1, segment %2").arg(f.label()).arg(segment) : f.label();
}

// The head-averaged maps of sel's family, layers 0..lastLayer, for rollout and flow: square
// self-attention over the same tokens in every layer. `first` receives layer 0's map.
std::vector<std::vector<float>> headMeanLayers(const Trace& trace, const AttentionSelection& sel, int lastLayer,
                                               const AttentionMap*& first) {
  std::vector<std::vector<float>> layers;
  for (int l = 0; l <= lastLayer; ++l) {
    AttentionSelection s = sel;
    s.layer = l;
    const AttentionMap& m = requireAttentionMap(trace, s);
    if (m.memory_keys > 0 || m.queries.side != m.keys.side || m.queries.begin != m.keys.begin ||
        m.queries.count != m.keys.count || (first && m.queries.count != first->queries.count))
      throw AtlasError("attention rollout and flow need square self-attention over the same tokens in every layer; '" +
                       m.array + "' has " + std::to_string(m.queries.count) + " queries and " +
                       std::to_string(m.keys.count) + " keys" +
                       (m.memory_keys > 0 ? " (" + std::to_string(m.memory_keys) + " of them memory)" : ""));
    if (!first) first = &m;
    layers.push_back(mapHeadMean(trace, m));
  }
  return layers;
}

}  // namespace

std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const AttentionSelection& sel, int lastLayer) {
  if (sel.kind == "cross_attn")
    throw AtlasError("attention rollout needs self-attention; cross-attention mixes two "
                     "sequences (choose the encoder or decoder self-attention)");
  // One family in one segment: an XL segment's keys include memory from earlier segments, so
  // a product across segments would mix different token sets.
  const auto families = attentionFamilies(trace);
  const AttentionFamily* family = findFamily(families, sel.stack, sel.kind);
  const AttentionMap* first = nullptr;
  const std::vector<std::vector<float>> layers = headMeanLayers(trace, sel, lastLayer, first);
  if (!first) return {};
  const int n = static_cast<int>(first->queries.count);
  auto prefixes = attentionRolloutPrefixes(layers, n);
  const QString what = familyTitle(family ? *family : AttentionFamily{sel.stack, sel.kind}, sel.segment);
  const bool steps = family && family->steps;
  std::vector<HeatmapData> out;
  for (int l = 0; l <= lastLayer; ++l) {
    HeatmapData d;
    d.rows = d.cols = n;
    d.values = std::move(prefixes[static_cast<size_t>(l)]);
    setMapLabels(d, trace, *first);
    d.valueName = "rollout weight";
    d.title = steps ? QString("%1, rollout of steps 1-%2").arg(what).arg(l + 1)
                    : QString("%1, rollout of layers 0-%2").arg(what).arg(l);
    out.push_back(std::move(d));
  }
  return out;
}

HeatmapData rolloutHeatmap(const Trace& trace, const AttentionSelection& sel) {
  auto all = rolloutHeatmaps(trace, sel, sel.layer);
  if (all.empty()) throw AtlasError("attention rollout needs a layer index of 0 or more");
  return std::move(all.back());
}

HeatmapData flowHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.kind == "cross_attn")
    throw AtlasError("attention flow needs self-attention; cross-attention mixes two sequences");
  const AttentionMap* first = nullptr;
  const std::vector<std::vector<float>> layers = headMeanLayers(trace, sel, sel.layer, first);
  if (!first) throw AtlasError("attention flow needs a layer index of 0 or more");
  const int n = static_cast<int>(first->queries.count);
  std::vector<Tensor> mixed;
  for (const auto& a : layers) mixed.push_back(residual_mix(a.data(), n));
  // Long inputs: one row, the pinned query's, else the token whose prediction a decoder makes
  // (the last) or an encoder's first ([CLS]); every pair would be n^2 max-flows.
  const bool full = n <= kAttentionFlowFullLimit;
  const bool pinned = sel.query >= 0 && sel.query < n;
  const int row = pinned ? sel.query : sel.stack == "decoder" ? n - 1 : 0;
  const Tensor f = attention_flow(mixed, full ? std::vector<int64_t>{} : std::vector<int64_t>{row});
  HeatmapData d;
  d.rows = d.cols = n;
  d.values.assign(f.data.begin(), f.data.end());
  if (!full) {
    d.mask.assign(d.values.size(), 0);
    for (int j = 0; j < n; ++j) d.mask[size_t(row) * n + j] = 1;
    for (float& v : d.values)
      if (!std::isfinite(v)) v = 0.0f;
  }
  setMapLabels(d, trace, *first);
  const auto families = attentionFamilies(trace);
  const AttentionFamily* family = findFamily(families, sel.stack, sel.kind);
  const QString what = familyTitle(family ? *family : AttentionFamily{sel.stack, sel.kind}, sel.segment);
  const bool steps = family && family->steps;
  d.title = steps ? QString("%1, attention flow through steps 1-%2").arg(what).arg(sel.layer + 1)
                  : QString("%1, attention flow through layers 0-%2").arg(what).arg(sel.layer);
  if (!full)
    d.title += pinned ? QString(" (the pinned query's row %1 only: %2 tokens)").arg(row).arg(n)
                      : QString(" (row %1 only: %2 tokens; pin a query for its row)").arg(row).arg(n);
  d.valueName = "max-flow";
  return d;
}

HeatmapData valueWeightedHeatmap(const Trace& trace, const AttentionSelection& sel) {
  if (sel.head < 0) throw AtlasError("value-weighted attention is per head: choose a head number");
  HeatmapData d = attentionHeatmap(trace, sel);
  const std::vector<float> norms = value_norms(trace, requireAttentionMap(trace, sel), sel.head);
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j) d.values[size_t(i) * d.cols + j] *= norms[size_t(j)];
  d.title = "value-weighted " + d.title;
  d.valueName = "α |f(x)| (norm)";
  return d;
}

}  // namespace atlas::ui
