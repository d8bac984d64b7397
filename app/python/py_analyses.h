#pragma once
// The research analyses as methods of Model, each the engine's own function behind an atlas
// verb (docs/python.md "Analyses"): patch (atlas patch), dla (atlas dla), ablate (atlas ablate),
// head_statistics (atlas heads). Results are dicts of numpy arrays (copies: the engine returns
// them in plain vectors) and numbers.
#include <pybind11/pybind11.h>

#include "app/python/py_model.h"

namespace atlas::python {

void bind_analyses(pybind11::class_<PyModel>& model_class);

}  // namespace atlas::python
