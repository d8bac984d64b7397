#pragma once
// The positional encoding as the views draw it: P [L, d] (or RoPE's rotation table) and P P^T.
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

HeatmapData positionalHeatmap(const Trace& trace);    // P [L, d]
HeatmapData positionalSimilarity(const Trace& trace);  // P P^T [L, L]


}  // namespace atlas::ui
