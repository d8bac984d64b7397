#pragma once
// Trace.figure(...): a view of a run drawn by the app's own painters (ui/export/figure_export.h),
// the figure `atlas export` writes for the same selection, to show inline in Jupyter
// (_repr_svg_, _repr_png_) or save as SVG, PDF, PNG, .npy or .csv. docs/python.md, "Figures".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree

#include "app/python/py_trace.h"

namespace atlas::python {

// Adds Trace.figure and the Figure class to the module. Without the Qt UI in the build
// (ATLAS_GUI=OFF), Trace.figure raises AtlasError saying so.
void bind_figures(py::module_& m, py::class_<PyTrace>& trace_class);

}  // namespace atlas::python
