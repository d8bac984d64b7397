#pragma once
// One head of an attention map as a dense [Lq, Lk] matrix, whatever the trace holds: a dense
// array's slice, a CSR-only map (traced that way because it is long) decoded onto zeros, or a map
// computed on request from its queries and keys (below kMaxDensifiedCells); and the labels and
// mask every map heatmap gets.
#include <cstdint>
#include <string>
#include <vector>

#include "ui/views/heatmap_data.h"

namespace atlas::ui {

// Densifying a CSR-only map (traced that way because it is long) costs Lq x Lk floats per
// head: refuse beyond what a heatmap can sensibly hold rather than exhaust memory.
constexpr int64_t kMaxDensifiedCells = int64_t(8192) * 8192;

// The array `name`, or an AtlasError saying the model does not record it.
const TracedArray& requireTraced(const Trace& trace, const std::string& name);
// Head h of a map as [Lq, Lk] values. A dense map is a slice of its array; a CSR-only map has
// its nonzeros spread over zeros, and `allowed` (when given, [Lq, Lk]) gets 1 at the head's own
// nonzeros (all of the union's when the trace has no per-head `.allowed`).
std::vector<float> mapHead(const Trace& trace, const AttentionMap& m, int64_t h, std::vector<uint8_t>* allowed);
// The mean over the map's heads, [Lq, Lk].
std::vector<float> mapHeadMean(const Trace& trace, const AttentionMap& m);
// The map's query and key labels (queryLabelsOf, keyLabelsOf) and axis names.
void setMapLabels(HeatmapData& d, const Trace& trace, const AttentionMap& m);
// The traced mask `maskName` ([rows, cols]) onto d.mask; nothing when absent or mis-sized.
void copyMask(HeatmapData& d, const Trace& trace, const std::string& maskName);

}  // namespace atlas::ui
