#pragma once
// atlas export --panel ID: one plot of a variant panel (the app's View > Variant panels, each
// module's ui/panels/<m>/ and the analysis panels), drawn as the panel's own Export button
// writes it. The run is made with what the panel reads: scores,
// queries and keys, the logit lens, the Performer study or an ablated second run.
#if defined(ATLAS_HAVE_UI)
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/analysis/ablation.h"
#include "core/model/model.h"
#include "ui/panels/variant_plots.h"

namespace atlas::cli {

// The panel `id` names; throws AtlasError listing the ids.
ui::PanelProvider panel_provider(const std::string& id);
// Every panel's id, comma-separated, in the app's order.
std::string panel_ids();
// Sets what the panel's arrays need traced (scores, q/k, the lens's hidden states).
void trace_for_panel(const ui::PanelProvider& panel, TraceOptions& trace);
// Adds the arrays the panel computes after the run (the logit lens, the Performer study, the
// ablation's comparison with `ablation`); refuses, naming the reason, what the model or the
// flags cannot give it.
void add_panel_arrays(const ui::PanelProvider& panel, const Model& model, RunResult& result,
                      const RunOptions& options, const AblationSpec& ablation);
// The plot `which` names: its index, or a case-insensitive part of its name that only one
// plot has; empty = the first. Throws AtlasError listing the plots.
size_t choose_plot(const std::vector<ui::PanelPlot>& plots, const std::string& which, const std::string& panel);
// The selection --layer, --head and --query give the panel, each checked against what the
// panel follows in `trace` (PanelProvider::selection): a value out of its range, or a flag
// for a part the panel does not follow, is refused naming the valid range. The token text is
// left to the caller.
ui::PanelContext panel_context(const Args& args, const ui::PanelProvider& panel, const Trace& trace);

}  // namespace atlas::cli
#endif
