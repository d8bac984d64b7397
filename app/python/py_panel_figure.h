#pragma once
// Model.panel_figure(input, panel, plot): a plot of one of the app's variant panels (View >
// Variant panels: Transformer-XL, LSH buckets, ACT ponder steps, the logit lens, ...) drawn as
// `atlas export MODEL --text ... --panel ID --plot K` draws it; Model.panel_plots lists a panel's
// plots and attention_atlas.panels() the panels. docs/python.md, "Figures".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree

#include "app/python/py_model.h"

namespace atlas::python {

// Without the Qt UI in the build (ATLAS_GUI=OFF) the methods raise AtlasError saying so.
void bind_panel_figures(py::module_& m, py::class_<PyModel>& model_class);

}  // namespace atlas::python
