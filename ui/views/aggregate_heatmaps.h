#pragma once
// Heatmaps that combine maps: attention rollout and flow through a family's layers, and
// value-weighted attention of one head (core/analysis/: attention_rollout.h, attention_flow.h,
// value_weighted.h).
#include <vector>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

// Attention rollout (Abnar & Zuidema 2020) of sel's family and segment, layers 0..sel.layer.
HeatmapData rolloutHeatmap(const Trace& trace, const AttentionSelection& sel);
// Attention flow (core/analysis/attention_flow.h) of sel's family through layers 0..sel.layer,
// on the same residual-mixed layers as rollout; above kAttentionFlowFullLimit tokens only the
// decoder's last row or the encoder's first is computed (the other rows masked).
HeatmapData flowHeatmap(const Trace& trace, const AttentionSelection& sel);
// Value-weighted attention of one head (core/analysis/value_weighted.h): alpha_ij |f_h(x_j)|
// from a run traced with TraceOptions::value_norms.
HeatmapData valueWeightedHeatmap(const Trace& trace, const AttentionSelection& sel);
// The rollout of every prefix 0..l for l in [0, lastLayer], computed in one product chain.
std::vector<HeatmapData> rolloutHeatmaps(const Trace& trace, const AttentionSelection& sel, int lastLayer);
// Rollout maths on plain matrices (exposed for tests): `layers` are head-averaged [n, n]
// attention matrices, first layer first. Returns prod_l rownorm(0.5 A_l + 0.5 I), last first.
std::vector<float> attentionRollout(const std::vector<std::vector<float>>& layers, int n);
// The same, returning the product after every layer (element l = rollout up to layer l).
std::vector<std::vector<float>> attentionRolloutPrefixes(const std::vector<std::vector<float>>& layers,
                                                         int n);

}  // namespace atlas::ui
