#pragma once
// Maps computed on request (core/model/attention_on_demand.h) too large to hold whole: an
// overview of block maxima (at most 1024 cells a side, one pass over the map) whose `detail`
// computes exact windows as a view zooms in.
#include <memory>
#include <vector>

#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

// The overviews attentionHeatmap gives for every head of sel's map, then for HeadMean and
// HeadMax, computed in one pass over the map; empty unless the map is computed on request and
// over kExactHeatmapCells. (The model grid's tiles of a long input.)
std::vector<HeatmapData> onDemandOverviews(const Trace& trace, const AttentionSelection& sel);
// The overview of sel.head (a head, HeadMean or HeadMax) of `m`, a map computed on request.
// `shared` (optional): the trace as shared, so the overview's exact windows read its queries and
// keys in place (keeping it alive) instead of a copy of their own.
HeatmapData onDemandOverview(const Trace& trace, const AttentionMap& m, const AttentionSelection& sel,
                             const std::shared_ptr<const Trace>& shared);

}  // namespace atlas::ui
