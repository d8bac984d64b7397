#include "app/cli/panel_export.h"

#if defined(ATLAS_HAVE_UI)
#include "core/tensor/error.h"
#include "ui/panel_run_extras.h"

namespace atlas::cli {

namespace {

std::string plot_list(const std::vector<ui::PanelPlot>& plots) {
  std::string s;
  for (size_t i = 0; i < plots.size(); ++i) s += (i ? "; " : " ") + std::to_string(i) + ": " + plots[i].name.toStdString();
  return s;
}

}  // namespace

ui::PanelProvider panel_provider(const std::string& id) {
  for (const ui::PanelProvider& p : ui::variantProviders())
    if (p.id.toStdString() == id) return p;
  throw AtlasError("--panel '" + id + "' is not a panel; the panels are " + panel_ids());
}

std::string panel_ids() {
  std::string ids;
  for (const ui::PanelProvider& p : ui::variantProviders())
    ids += (ids.empty() ? "" : ", ") + p.id.toStdString();
  return ids;
}

void trace_for_panel(const ui::PanelProvider& panel, TraceOptions& trace) {
  trace.scores = trace.scores || panel.needsScores;
  trace.qk = trace.qk || panel.needsQk;
  if (panel.id == "lens") trace.hidden = true;  // the lens reads every layer's hidden state
}

void add_panel_arrays(const ui::PanelProvider& panel, const Model& model, RunResult& result,
                      const RunOptions& options, const AblationSpec& ablation) {
  const std::string id = panel.id.toStdString();
  if (!ablation.empty() && id != "ablation")
    throw AtlasError("--drop-layers, --drop-heads and --layerdrop-rate are for --panel ablation");
  ui::PanelRunExtras extras;  // as the app's post-run step adds them while the panel is open
  extras.lensOptional = false;  // the lens refuses a model it does not support
  if (id == "lens") extras.lens = true;
  if (id == "performer") {
    if (!model.config().performer())
      throw AtlasError("the Performer panel studies a Performer model's attention (performer.enabled)");
    extras.performer = true;
  }
  if (id == "ablation") {
    if (ablation.empty())
      throw AtlasError("--panel ablation compares with an ablated run: give --drop-heads L:H,..., "
                       "--drop-layers L,... or --layerdrop-rate P");
    extras.ablation = std::make_shared<const AblationSpec>(ablation);
  }
  ui::addPanelRunExtras(extras, model, result, options);
}

size_t choose_plot(const std::vector<ui::PanelPlot>& plots, const std::string& which, const std::string& panel) {
  if (plots.empty()) throw AtlasError("the " + panel + " panel draws nothing for this run");
  if (which.empty()) return 0;
  if (which.find_first_not_of("0123456789") == std::string::npos && which.size() < 9) {
    const size_t i = std::stoul(which);
    if (i < plots.size()) return i;
    throw AtlasError("--plot " + which + " does not exist; the " + panel + " panel's plots are" + plot_list(plots));
  }
  std::vector<size_t> hits;
  for (size_t i = 0; i < plots.size(); ++i)
    if (plots[i].name.contains(QString::fromStdString(which), Qt::CaseInsensitive)) hits.push_back(i);
  if (hits.size() == 1) return hits[0];
  throw AtlasError("--plot '" + which + "' names " + (hits.empty() ? "no plot" : "several plots") + "; the " +
                   panel + " panel's plots are" + plot_list(plots));
}

}  // namespace atlas::cli
#endif
