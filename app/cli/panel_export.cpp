#include "app/cli/panel_export.h"

#if defined(ATLAS_HAVE_UI)
#include "app/cli/map_selection.h"
#include "core/tensor/error.h"
#include "ui/panels/panel_run_extras.h"
#include "ui/panels/panel_registry.h"

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
  if (!which.empty() && which.find_first_not_of("-0123456789") == std::string::npos) {
    const IndexArg arg = parse_index_arg("--plot", which);
    if (arg.value >= 0 && arg.value < static_cast<long long>(plots.size())) return static_cast<size_t>(arg.value);
    throw AtlasError("--plot " + printable(which, 80) + " is out of range: the " + panel + " panel has " +
                     std::to_string(plots.size()) + " plots for this run (0 to " + std::to_string(plots.size() - 1) +
                     "):" + plot_list(plots));
  }
  std::vector<size_t> hits;
  for (size_t i = 0; i < plots.size(); ++i)
    if (plots[i].name.contains(QString::fromStdString(which), Qt::CaseInsensitive)) hits.push_back(i);
  if (hits.size() == 1) return hits[0];
  throw AtlasError("--plot '" + printable(which, 80) + "' names " + (hits.empty() ? "no plot" : "several plots") +
                   "; the " + panel + " panel's plots are" + plot_list(plots));
}

ui::PanelContext panel_context(const Args& args, const ui::PanelProvider& panel, const Trace& trace) {
  const ui::PanelSelectionRanges ranges = panel.selection ? panel.selection(trace) : ui::PanelSelectionRanges{};
  const std::string title = panel.title.toStdString();
  // A part of the selection the panel does not follow is refused, not ignored: the figure would
  // not be of the layer, head or position asked for.
  auto unfollowed = [&](const std::string& key, const std::string& text, const std::string& noun) {
    return AtlasError(key + " " + printable(text, 80) + ": the " + title + " panel follows no " + noun +
                      " (its plots are the same for every " + noun + "); leave " + key + " out");
  };
  ui::PanelContext ctx;
  if (auto layer = args.get_index("--layer")) {
    if (ranges.layer.count == 0) throw unfollowed("--layer", layer->text, "layer");
    ctx.layer = static_cast<int>(check_index(*layer, 0, ranges.layer.count - 1, ranges.layer.what.toStdString()));
  }
  if (auto head = args.get("--head")) {
    if (ranges.head.count == 0) throw unfollowed("--head", *head, "head");
    const std::vector<std::string> names = ranges.meanHead ? std::vector<std::string>{"mean"} : std::vector<std::string>{};
    ctx.head = parse_head_flag(*head, ranges.head.count, ranges.head.what.toStdString(), names);
  }
  if (auto query = args.get_index("--query")) {
    if (ranges.query.count == 0) throw unfollowed("--query", query->text, "position");
    ctx.query = query->value == -1 ? -1
                                   : static_cast<int>(check_index(*query, 0, ranges.query.count - 1,
                                                                  ranges.query.what.toStdString(),
                                                                  "or -1 for the panel's default"));
  }
  return ctx;
}

}  // namespace atlas::cli
#endif
