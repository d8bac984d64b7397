#pragma once
// Direct logit attribution (core/analysis/logit_attribution.h) of one position as the Logit
// attribution panel draws and exports it: the heads' parts as a layers x heads heatmap (diverging
// colours centred on 0), and every part of the sum as bars: embeddings, each layer's heads, output
// bias and MLP, the final norm's bias, the output bias, their total and the model's own logit.
#include <QString>
#include <functional>
#include <vector>

#include "core/analysis/logit_attribution.h"
#include "ui/panels/variant_plots.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

// `tokenText` names the vocabulary ids in the titles ("#id" when empty). Index 0 of the result's
// positions is drawn.
HeatmapData dlaHeadHeatmap(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText = {});
// [parts, 1]: one bar per part of the sum ("tok emb", "pos emb", per layer "L0 heads", "L0 b_O",
// "L0 MLP", then "norm bias", "out bias"), then "total" and "logit".
HeatmapData dlaComponentBars(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText = {});
// "logit[' Mary'] - logit[' John'] at 7: parts sum to 3.21, the model's 3.21".
QString dlaTitle(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText = {});
// The panel's plots, which its Export button and `atlas dla --figure` write: the heads' heatmap,
// then every part as bars.
std::vector<PanelPlot> dlaPlots(const LogitAttribution& a, const std::function<QString(int64_t)>& tokenText = {});

}  // namespace atlas::ui
