// Model.panel_figure, Model.panel_plots and panels() (py_panel_figure.h).
#include "app/python/py_panel_figure.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include "app/cli/args.h"
#include "app/cli/map_selection.h"
#include "app/cli/panel_export.h"
#include "app/python/py_figure.h"
#include "ui/panels/panel_chart.h"
#include "ui/panels/panel_registry.h"
#endif

namespace atlas::python {

#if defined(ATLAS_HAVE_UI)
namespace {

struct PanelRequest {
  py::object input, target;
  std::string panel;
  std::optional<long long> layer, head, query;
};

// A run of the input with what the panel reads traced (as `atlas export --panel` runs it), the
// arrays the panel computes after the run, and the panel's plots for the selection.
struct PanelRun {
  std::shared_ptr<const RunResult> result;
  std::vector<ui::PanelPlot> plots;
  std::string title;
};

const ui::PanelProvider& provider_named(const std::string& id) {
  static const std::vector<ui::PanelProvider> providers = ui::variantProviders();
  for (const ui::PanelProvider& p : providers)
    if (p.id.toStdString() == id) return p;
  throw AtlasError("panel '" + id + "' is not a panel; the panels are " + cli::panel_ids());
}

PanelRun panel_run(const PyModel& model, const PanelRequest& r) {
  ensure_qt_application();
  const ui::PanelProvider& panel = provider_named(r.panel);
  const std::string id = r.panel;
  if (id == "ablation")
    throw AtlasError("the ablation panel compares with an ablated run, which `atlas export --panel ablation "
                     "--drop-heads L:H,...` makes; from Python, ablate with run(hooks=...) (docs/python.md)");
  RunRequest run;
  run.input = r.input;
  run.target = r.target;
  run.hooks = py::none();
  TraceOptions wanted;
  cli::trace_for_panel(panel, wanted);
  run.scores = wanted.scores;
  run.qk = wanted.qk;
  run.hidden = wanted.hidden;
  const std::unique_ptr<PyTrace> trace = model.run(run);
  // The run is this call's alone (no Trace object was handed out), made non-const by the engine:
  // the panel's computed arrays (the lens, the Performer study) are added to it in place.
  const std::shared_ptr<RunResult> result = std::const_pointer_cast<RunResult>(trace->shared_result());
  cli::add_panel_arrays(panel, model.model(), *result, model.analysis_options(), AblationSpec{});
  PanelRun out;
  out.title = panel.title.toStdString();
  if (!panel.available(result->trace))
    throw AtlasError("the " + out.title + " panel has nothing to draw for this model: it reads " +
                     panel.arrays.toStdString());
  std::vector<std::string> flags;
  auto put = [&flags](const char* key, const std::optional<long long>& v) {
    if (v) flags.push_back(key), flags.push_back(std::to_string(*v));
  };
  put("--layer", r.layer);
  put("--head", r.head);
  put("--query", r.query);
  const cli::Args args(flags, cli::ArgSpec{{"--layer", "--head", "--query"}, {}});
  cli::check_index_syntax(args);
  ui::PanelContext ctx = cli::panel_context(args, panel, result->trace);
  const Model* m = &model.model();
  ctx.tokenText = [m](int32_t token) { return QString::fromStdString(m->tokenizer().label(token)); };
  out.plots = panel.plots(result->trace, ctx);
  out.result = result;
  return out;
}

PanelRequest request(py::object input, py::object target, const std::string& panel, std::optional<long long> layer,
                     std::optional<long long> head, std::optional<long long> query) {
  return PanelRequest{std::move(input), std::move(target), panel, layer, head, query};
}

}  // namespace

void bind_panel_figures(py::module_& m, py::class_<PyModel>& model_class) {
  m.def("panels", [] {
    py::dict out;
    for (const ui::PanelProvider& p : ui::variantProviders())
      out[py::str(p.id.toStdString())] = p.title.toStdString();
    return out;
  }, "The app's variant panels, {id: title}, in the app's order (Model.panel_figure draws their plots)");
  model_class.def(
      "panel_plots",
      [](const PyModel& model, py::object input, const std::string& panel, py::object target,
         std::optional<long long> layer, std::optional<long long> head, std::optional<long long> query) {
        const PanelRun run = panel_run(model, request(std::move(input), std::move(target), panel, layer, head, query));
        std::vector<std::string> names;
        for (const ui::PanelPlot& p : run.plots) names.push_back(p.name.toStdString());
        return names;
      },
      py::arg("input"), py::arg("panel"), py::kw_only(), py::arg("target") = py::none(),
      py::arg("layer") = py::none(), py::arg("head") = py::none(), py::arg("query") = py::none(),
      "The names of the panel's plots for this input and selection (`atlas export --panel ID --list-plots`)");
  model_class.def(
      "panel_figure",
      [](const PyModel& model, py::object input, const std::string& panel, py::object plot, py::object target,
         std::optional<long long> layer, std::optional<long long> head, std::optional<long long> query,
         const std::string& title, std::optional<double> width, std::optional<double> height, int dpi) {
        if (dpi < 10 || dpi > 2400) throw AtlasError("dpi " + std::to_string(dpi) + " is out of range (10 to 2400)");
        ui::FigureSpec fig;
        fig.dpi = dpi;
        fig.title = QString::fromStdString(title);
        if (width.has_value() != height.has_value()) throw AtlasError("give both width and height (inches)");
        if (width) {
          for (double v : {*width, *height})
            if (!(v > 0 && v <= 100)) throw AtlasError("width and height are sizes in inches between 0 and 100");
          fig.sizeInches = QSizeF(*width, *height);
        }
        std::string which;
        if (py::isinstance<py::bool_>(plot)) throw py::type_error("plot is a plot's index or a part of its name");
        if (py::isinstance<py::int_>(plot)) which = std::to_string(plot.cast<long long>());
        else if (py::isinstance<py::str>(plot)) which = plot.cast<std::string>();
        else if (!plot.is_none()) throw py::type_error("plot is a plot's index or a part of its name");
        const PanelRun run = panel_run(model, request(std::move(input), std::move(target), panel, layer, head, query));
        const ui::PanelPlot& chosen = run.plots[cli::choose_plot(run.plots, which, run.title)];
        return PyFigure(run.result, ui::panelFigure(chosen, fig), dpi);
      },
      py::arg("input"), py::arg("panel"), py::arg("plot") = py::none(), py::kw_only(), py::arg("target") = py::none(),
      py::arg("layer") = py::none(), py::arg("head") = py::none(), py::arg("query") = py::none(),
      py::arg("title") = "", py::arg("width") = py::none(), py::arg("height") = py::none(), py::arg("dpi") = 150,
      "A plot of one of the app's variant panels (attention_atlas.panels()) for this input, as `atlas export "
      "--panel ID --plot K` draws it: plot is an index or a part of the plot's name (default: the first); "
      "layer, head and query are the selection the panel follows");
}

#else

void bind_panel_figures(py::module_& m, py::class_<PyModel>& model_class) {
  const auto refuse = [](py::args, py::kwargs) -> py::object {
    throw AtlasError("this attention_atlas was built without the Qt UI (ATLAS_GUI=OFF), which draws the figures");
  };
  m.def("panels", refuse);
  model_class.def("panel_plots", refuse);
  model_class.def("panel_figure", refuse);
}

#endif

}  // namespace atlas::python
