// Trace.figure and Figure (py_figure.h).
#include "app/python/py_figure.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/error.h"

#if defined(ATLAS_HAVE_UI)
#include <QBuffer>
#include <QByteArray>
#include <QGuiApplication>
#include <QImage>

#include "app/cli/args.h"
#include "app/cli/headless_qt.h"
#include "app/cli/map_selection.h"
#include "ui/export/figure_export.h"
#include "ui/views/attention_selection.h"
#include "ui/views/value_mapper.h"
#endif

namespace atlas::python {

#if defined(ATLAS_HAVE_UI)

// Made once on the offscreen platform when there is no display and kept for the life of the
// process: destroying it while the interpreter shuts down would race Python's own finalisation.
void ensure_qt_application() {
  if (QGuiApplication::instance()) return;
  static QGuiApplication* const app = cli::make_headless_app().release();  // never destroyed
  (void)app;
}

py::str PyFigure::svg() const {
  const QByteArray bytes = ui::figureSvg(content_);
  return py::str(bytes.constData(), size_t(bytes.size()));
}

py::bytes PyFigure::png(std::optional<int> dpi) const {
  const int d = dpi.value_or(dpi_);
  if (d < 10 || d > 2400) throw AtlasError("dpi " + std::to_string(d) + " is out of range (10 to 2400)");
  const QImage image = ui::figureImage(content_, d);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) throw AtlasError("the figure could not be encoded as PNG");
  return py::bytes(bytes.constData(), size_t(bytes.size()));
}

void PyFigure::save(const std::string& path) const {
  ensure_qt_application();
  ui::writeFigure(content_, dpi_, QString::fromStdString(path));
}

namespace {

// What figure() was asked for, as the flags of `atlas export` (their checks and messages are
// the CLI's: a notebook error reads like the CLI's).
struct FigureRequest {
  std::string view = "heatmap";
  std::optional<std::string> stack, kind, head;
  std::optional<long long> layer, step, segment, query;
  std::string colormap = "viridis", scale = "linear", normalize = "global", title;
  bool shared_scale = false;
  std::optional<double> width, height;
  int dpi = 150;
};

std::vector<std::string> as_flags(const FigureRequest& r) {
  std::vector<std::string> a;
  auto put = [&a](const char* key, const std::string& v) { a.push_back(key), a.push_back(v); };
  if (r.stack) put("--stack", *r.stack);
  if (r.kind) put("--kind", *r.kind);
  if (r.layer) put("--layer", std::to_string(*r.layer));
  if (r.step) put("--step", std::to_string(*r.step));
  if (r.segment) put("--segment", std::to_string(*r.segment));
  if (r.head) put("--head", *r.head);
  return a;
}

PyFigure make_figure(const PyTrace& trace, const FigureRequest& r) {
  ensure_qt_application();
  const Trace& t = trace.result().trace;
  ui::FigureSpec fig;
  fig.view = QString::fromStdString(r.view);
  if (!ui::figureViews().contains(fig.view))
    throw AtlasError("view '" + r.view + "' is not one of " + ui::figureViews().join(", ").toStdString());
  if (r.dpi < 10 || r.dpi > 2400) throw AtlasError("dpi " + std::to_string(r.dpi) + " is out of range (10 to 2400)");
  fig.dpi = r.dpi;
  fig.title = QString::fromStdString(r.title);
  if (r.width.has_value() != r.height.has_value()) throw AtlasError("give both width and height (inches)");
  if (r.width) {
    for (double v : {*r.width, *r.height})
      if (!(v > 0 && v <= 100)) throw AtlasError("width and height are sizes in inches between 0 and 100");
    fig.sizeInches = QSizeF(*r.width, *r.height);
  }
  if (r.colormap != "viridis" && r.colormap != "magma" && r.colormap != "diverging")
    throw AtlasError("colormap '" + r.colormap + "' is not one of viridis, magma, diverging");
  fig.mapping.colormap = ui::colormapFromKey(QString::fromStdString(r.colormap));
  if (r.scale != "linear" && r.scale != "log") throw AtlasError("scale '" + r.scale + "' is not linear or log");
  fig.mapping.scale = r.scale == "log" ? ui::ColorScale::Log : ui::ColorScale::Linear;
  if (r.normalize != "global" && r.normalize != "row")
    throw AtlasError("normalize '" + r.normalize + "' is not global or row");
  fig.mapping.normalization = r.normalize == "row" ? ui::Normalization::Row : ui::Normalization::Global;
  fig.mapping.sharedScale = r.shared_scale;
  if (r.shared_scale && r.view != "model")
    throw AtlasError("shared_scale is for view=\"model\" (one colour scale for every tile of the grid)");

  const cli::Args args(as_flags(r), cli::ArgSpec{{"--stack", "--kind", "--layer", "--step", "--segment", "--head"}, {}});
  cli::check_index_syntax(args);
  const bool needs_attention = r.view == "heatmap" || r.view == "model" || r.view == "tokens";
  std::string label;
  if (auto sel = cli::select_attention_map(args, t, needs_attention, &label)) fig.selection = *sel;
  const bool flow_row = r.view == "heatmap" && fig.selection.head == ui::HeadFlow;
  if (r.query) {
    if (r.view != "tokens" && !flow_row)
      throw AtlasError("query picks the query whose lines the tokens view draws, or the row the heatmap's attention "
                       "flow computes for a long input (head=\"flow\"); the " + r.view + " view has no use for it");
    const AttentionMap* map = ui::findAttentionMap(t, fig.selection);
    const long long rows = map ? static_cast<long long>(map->queries.count) : 0;
    fig.query = static_cast<int>(cli::check_index(cli::parse_index_arg("query", std::to_string(*r.query)), -1, rows - 1,
                                                  "the " + label + " has " + std::to_string(rows) + " queries",
                                                  "or -1 for all"));
    if (flow_row) fig.selection.query = fig.query;
  }
  return PyFigure(trace.shared_result(), ui::figureContent(fig, t), r.dpi);
}

}  // namespace

void bind_figures(py::module_& m, py::class_<PyTrace>& trace_class) {
  py::class_<PyFigure>(m, "Figure",
                       "A view drawn by the app's painters: shows inline in Jupyter, saves as SVG, PDF, PNG, "
                       ".npy (its data) or .csv")
      .def_property_readonly("title", &PyFigure::title)
      .def_property_readonly("size_inches", &PyFigure::size_inches)
      .def("svg", &PyFigure::svg, "The SVG document (what save('x.svg') writes)")
      .def("png", &PyFigure::png, py::arg("dpi") = py::none(), "PNG bytes at dpi (default: the figure's)")
      .def("save", &PyFigure::save, py::arg("path"), "Writes the figure; the format from the extension")
      .def("_repr_svg_", &PyFigure::svg)
      .def("_repr_png_", [](const PyFigure& f) { return f.png(std::nullopt); })
      .def("__repr__", [](const PyFigure& f) { return "<attention_atlas.Figure: " + f.title() + ">"; });
  trace_class.def(
      "figure",
      [](const PyTrace& t, const std::string& view, std::optional<std::string> stack, std::optional<std::string> kind,
         std::optional<long long> layer, std::optional<long long> step, std::optional<long long> segment,
         py::object head, std::optional<long long> query, const std::string& colormap, const std::string& scale,
         const std::string& normalize, bool shared_scale, const std::string& title, std::optional<double> width,
         std::optional<double> height, int dpi) {
        FigureRequest r;
        r.view = view, r.stack = stack, r.kind = kind, r.layer = layer, r.step = step, r.segment = segment;
        if (!head.is_none()) r.head = py::str(head).cast<std::string>();
        r.query = query, r.colormap = colormap, r.scale = scale, r.normalize = normalize;
        r.shared_scale = shared_scale, r.title = title, r.width = width, r.height = height, r.dpi = dpi;
        return make_figure(t, r);
      },
      py::arg("view") = "heatmap", py::kw_only(), py::arg("stack") = py::none(), py::arg("kind") = py::none(),
      py::arg("layer") = py::none(), py::arg("step") = py::none(), py::arg("segment") = py::none(),
      py::arg("head") = py::none(), py::arg("query") = py::none(), py::arg("colormap") = "viridis",
      py::arg("scale") = "linear", py::arg("normalize") = "global", py::arg("shared_scale") = false,
      py::arg("title") = "", py::arg("width") = py::none(), py::arg("height") = py::none(), py::arg("dpi") = 150,
      "A view of this run as `atlas export` draws it: view 'heatmap' (one layer/step/segment and head; head "
      "may be 'mean', 'max', 'rollout' or 'flow'), 'model' (every layer x head), 'tokens' (lines from queries "
      "to keys), 'positional' or 'similarity'");
}

#else

void bind_figures(py::module_&, py::class_<PyTrace>& trace_class) {
  trace_class.def("figure", [](const PyTrace&, py::args, py::kwargs) -> py::object {
    throw AtlasError("this attention_atlas was built without the Qt UI (ATLAS_GUI=OFF), which draws the figures");
  });
}

#endif

}  // namespace atlas::python
