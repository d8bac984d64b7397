#pragma once
// Trace.figure(...): a view of a run drawn by the app's own painters (ui/export/figure_export.h),
// the figure `atlas export` writes for the same selection, to show inline in Jupyter
// (_repr_svg_, _repr_png_) or save as SVG, PDF, PNG, .npy or .csv. docs/python.md, "Figures".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "app/python/py_trace.h"

#if defined(ATLAS_HAVE_UI)
#include "ui/export/figure_export.h"
#endif

namespace atlas::python {

// Adds Trace.figure and the Figure class to the module. Without the Qt UI in the build
// (ATLAS_GUI=OFF), Trace.figure raises AtlasError saying so.
void bind_figures(py::module_& m, py::class_<PyTrace>& trace_class);

#if defined(ATLAS_HAVE_UI)

// The application object the painters need (fonts).
void ensure_qt_application();

// A figure's content and the run whose arrays it reads (kept alive with it).
class PyFigure {
 public:
  PyFigure(std::shared_ptr<const RunResult> result, ui::FigureContent content, int dpi)
      : result_(std::move(result)), content_(std::move(content)), dpi_(dpi) {}

  std::string title() const { return content_.title.toStdString(); }
  std::pair<double, double> size_inches() const { return {content_.sizeInches.width(), content_.sizeInches.height()}; }
  py::str svg() const;
  py::bytes png(std::optional<int> dpi) const;  // at the figure's dpi when none is given
  void save(const std::string& path) const;    // the format from the extension

 private:
  std::shared_ptr<const RunResult> result_;  // the painters read the run's arrays
  ui::FigureContent content_;
  int dpi_ = 150;
};

#endif

}  // namespace atlas::python
