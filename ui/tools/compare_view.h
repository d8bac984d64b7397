#pragma once
// The comparison views of two runs A and B (core/analysis/attention_compare.h), shared by the
// Compare panel and `atlas compare`: the difference A - B of the selected map and head
// (diverging colours centred on 0), A and B side by side on one colour scale, and the per-head
// distance grid (mean total variation) of the selected map family. Each throws AtlasError with
// the reason when the runs cannot be compared (other token counts, a map only one run has).
#include "core/analysis/attention_compare.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

// A - B of sel's map (a head, or the mean / max over heads). Axis labels are A's tokens; where
// B's token differs the label reads "a|b". Cells masked in either run are masked.
HeatmapData compareDifference(const Trace& a, const Trace& b, const AttentionSelection& sel);
// [Lq, 2 Lk + 1]: A's map, a masked separator column, then B's map; column labels "A tok", "B tok".
HeatmapData compareSideBySide(const Trace& a, const Trace& b, const AttentionSelection& sel);
// [layers, heads] of the mean TV distance between A's and B's maps in sel's family (and segment).
HeatmapData compareHeadGrid(const Trace& a, const Trace& b, const AttentionSelection& sel);
// The colours of each view: diverging centred on 0 for the difference, viridis otherwise.
ColorMapping compareDifferenceMapping();

}  // namespace atlas::ui
