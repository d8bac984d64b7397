#pragma once
// Corpus mode from Python (docs/corpus.md, docs/python.md): Model.corpus runs or resumes a corpus
// index as `atlas corpus` does; corpus_merge, corpus_index, corpus_links and corpus_heads are
// `atlas corpus-merge` and `atlas corpus-query` as functions returning dicts and numpy arrays.
#include <pybind11/pybind11.h>

#include "app/python/py_model.h"

namespace atlas::python {

void bind_corpus(pybind11::module_& m, pybind11::class_<PyModel>& model_class);

}  // namespace atlas::python
