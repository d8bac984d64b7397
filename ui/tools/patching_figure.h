#pragma once
// The activation-patching grid (core/analysis/patching.h) as the Patching panel draws and exports
// it: layers x positions (resid, attn, mlp), layers x heads (head), or layers x heads at one
// position of a head-pos grid. Values are normalised (clean = 1, corrupted = 0) in diverging
// colours centred on 0; when the two runs give the same metric (no normalisation) the raw metric
// is drawn instead and the title says so. Unfinished cells of a cancelled grid are masked.
#include <QString>
#include <QStringList>

#include "core/analysis/path_patching.h"
#include "core/analysis/patching.h"
#include "ui/panels/variant_plots.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

// `tokenLabels`: the clean input's token labels (column labels of a position grid); `slice`:
// the position of a head-pos grid's layers x heads slice.
HeatmapData patchingHeatmap(const PatchResult& r, const QStringList& tokenLabels, int slice = 0);
// One line: site, direction, metric, the clean and corrupted metrics, and a cancelled grid's state.
QString patchingTitle(const PatchResult& r);
// Whether the grid's columns are heads (head, head-pos) rather than positions.
bool patchingColumnsAreHeads(const PatchResult& r);
// The panel's grid plot (what its Export and `atlas patch/attribute --figure` write).
PanelPlot patchingGridPlot(const PatchResult& r, const QStringList& tokenLabels, int slice = 0);
// A head-pos grid's position holding its strongest cell (|raw - unpatched| largest), else 0: the
// slice a figure shows when none is asked for.
int64_t patchingStrongestPosition(const PatchResult& r);

// Path patching's grid (core/analysis/path_patching.h): sender layers x heads into the given
// receivers, or, with every head as a receiver, senders (rows "L0H3") x receivers (columns). A
// sender at or after every receiver's layer has no path to it: masked, never drawn as an effect.
// Normalised values, diverging colours centred on 0, as the activation patching grid.
PanelPlot pathPatchingPlot(const PathPatchResult& r);

}  // namespace atlas::ui
