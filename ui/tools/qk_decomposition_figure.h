#pragma once
// "Why this head attends here" (core/analysis/qk_decomposition.h) as the QK decomposition panel
// draws and exports it: the score of one (head, query, key) cell as a matrix of query-side x
// key-side components (diverging colours centred on 0; its cells sum to the score), and the value
// path as bars (each key-side component's projection on the head's output at the query). Rows,
// columns and bars are named by the decomposition's own names, never by a list kept here, so a
// new component or extra term (an XL term, a new positional scheme) shows without a change here.
#include <QString>
#include <QStringList>

#include <vector>

#include "core/analysis/qk_decomposition.h"
#include "ui/panels/variant_plots.h"
#include "ui/views/heatmap_data.h"

namespace atlas::ui {

// `tokens`: the input's token labels by position, to name the query and key (empty: positions
// only). "L1 H0, 15 'a' -> 3 'a': sum 2.351, score 2.351" (query -> key; the sum of the cells
// beside the engine's traced score).
QString qkDecompositionTitle(const QkDecomposition& r, const QStringList& tokens = {});
// [rows, columns] of r.cells, labelled by r.rows and r.columns.
HeatmapData qkScoreMatrix(const QkDecomposition& r, const QStringList& tokens = {});
// [value components, 1]: r.value_projection by r.value_names, then "|o|" (their sum, the head
// output's norm). Empty when the decomposition has no value path.
HeatmapData qkValueBars(const QkDecomposition& r);
// The panel's plots, which its Export button and `atlas qk-decompose --figure` write: the score
// matrix, then the value path's bars when r has one.
std::vector<PanelPlot> qkDecompositionPlots(const QkDecomposition& r, const QStringList& tokens = {});

}  // namespace atlas::ui
