#pragma once
// Analyses of runs already made, as functions of Traces (docs/python.md "Analyses"): compare
// (atlas compare's per-head distances and one head's difference map) and search (atlas search's
// token search). The engine's own functions (core/analysis/attention_compare.h, token_search.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree

#include "app/python/py_trace.h"

namespace atlas::python {

void bind_trace_analyses(py::module_& m, py::class_<PyTrace>& trace_class);

}  // namespace atlas::python
