#pragma once
// The heatmap of one attention map and head or aggregate, read from the trace: a dense array's
// slice, a CSR-only map decoded (map_matrix.h), an on-demand map computed or shown as an
// overview (map_overview.h), rollout and flow (aggregate_heatmaps.h).
#include <cstdint>
#include <memory>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

// The [Lq, Lk] matrix of one map (findAttentionMap) and head or aggregate: the dense array's
// slice, a CSR-only map's nonzeros spread over masked cells, or an on-demand map's weights
// computed from its queries and keys; an on-demand map over kExactHeatmapCells comes as an
// overview of block maxima with a `detail` for exact windows. Throws AtlasError naming the
// missing map or head.
constexpr int64_t kExactHeatmapCells = int64_t(2048) * 2048;
// Whether attentionHeatmap gives head `head` (a head index, HeadMean or HeadMax) of `m` as an
// overview of block maxima: a map computed on request with more than kExactHeatmapCells cells.
bool heatmapIsOverview(const AttentionMap& m, int head);
HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel);
// The same; an overview of a map computed on request then shares the trace (its exact windows
// read the trace's queries and keys, keeping it alive) instead of copying them.
HeatmapData attentionHeatmap(const std::shared_ptr<const Trace>& trace, const AttentionSelection& sel);
}  // namespace atlas::ui
