#pragma once
// The ablation sweep's figure (core/analysis/ablation_sweep.h) as the GUI panel and
// `atlas ablate --out` draw it: a layers x heads heatmap (layers x 1 for a layer sweep) of each
// cell's effect, the metric of the ablated run minus the clean run's, in diverging colours
// centred on 0 when the effect can have either sign (loss, logit difference, cosine) and in
// viridis for KL (never negative). Cells a sweep could not run (NaN) are masked.
#include <QString>

#include "core/analysis/ablation_sweep.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/value_mapper.h"

namespace atlas::ui {

HeatmapData sweepHeatmap(const SweepResult& r);
ColorMapping sweepColorMapping(const SweepResult& r);
// "Δ loss (nats)", "KL(clean || ablated) (nats)", ...: the colour bar's title.
QString sweepEffectName(const SweepResult& r);
// One line: what was ablated, how, and the clean run's metric.
QString sweepTitle(const SweepResult& r);

}  // namespace atlas::ui
