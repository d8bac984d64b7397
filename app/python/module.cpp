// attention_atlas._atlas: the engine as a Python module (docs/python.md). Wiring only: the model and
// trace wrappers are in py_model.h and py_trace.h, the hooks in py_hooks.h, the TransformerLens
// aliases in tl_names.h.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "app/python/py_analyses.h"
#include "app/python/py_corpus.h"
#include "app/python/py_figure.h"
#include "app/python/py_model.h"
#include "app/python/py_panel_figure.h"
#include "app/python/py_trace.h"
#include "app/python/py_trace_analyses.h"
#include "core/model/model_arrays.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"

namespace py = pybind11;
using atlas::python::PyModel;
using atlas::python::PyTrace;
using atlas::python::RunRequest;

PYBIND11_MODULE(_atlas, m) {
  m.doc() = "Attention Atlas: transformer models, their traced attention and activations as numpy arrays";
  // The engine's one error type, with its message; std::bad_alloc is MemoryError (pybind11's own).
  py::register_exception<atlas::AtlasError>(m, "AtlasError", PyExc_RuntimeError);

  py::class_<PyTrace> trace_class(m, "Trace",
                      "What one run traced. trace[name] is a read-only numpy array over the engine's buffer "
                      "(no copy; its base is this Trace, which keeps the run alive).");
  trace_class
      .def("names", &PyTrace::names, "The traced arrays' names, in recording order")
      .def("aliases", &PyTrace::aliases, "The TransformerLens names this trace answers")
      .def("__getitem__", [](py::object self, const std::string& name) {
        return self.cast<PyTrace&>().get(self, name);
      })
      .def("__contains__", &PyTrace::contains)
      .def("__len__", [](const PyTrace& t) { return t.names().size(); })
      .def("__iter__", [](const PyTrace& t) { return py::iter(py::cast(t.names())); })
      .def("keys", &PyTrace::names)
      .def("meaning", &PyTrace::meaning, py::arg("name"), "One line: what the array holds, with its axes")
      .def_property_readonly("logits", [](py::object self) -> py::object {
        PyTrace& t = self.cast<PyTrace&>();
        if (!t.result().is_logits) return py::none();
        return t.get(self, atlas::model_arrays::kLogits);
      }, "[L, vocab] (None for a model without an output head: see output)")
      .def_property_readonly("output", [](py::object self) -> py::object {
        PyTrace& t = self.cast<PyTrace&>();
        return t.get(self, t.result().is_logits ? atlas::model_arrays::kLogits : "output");
      }, "The logits, or the final hidden states [L, d] of a model without an output head")
      .def_property_readonly("tokens", [](const PyTrace& t) { return t.token_labels(false); })
      .def_property_readonly("ids", [](const PyTrace& t) { return t.token_ids(false); })
      .def_property_readonly("target_tokens", [](const PyTrace& t) { return t.token_labels(true); })
      .def_property_readonly("target_ids", [](const PyTrace& t) { return t.token_ids(true); })
      .def("map", &PyTrace::map, py::arg("name"), py::arg("head") = py::none(), py::arg("rows") = py::none(),
           "An attention map's weights as a new float32 array, whatever its storage (dense, CSR, or computed on "
           "request from <map>.q and .k): head None ([heads, rows, Lk]), an index, \"mean\" or \"max\" "
           "([rows, Lk]); rows None, an index (that axis dropped) or a slice")
      .def_property_readonly("catalogue", &PyTrace::catalogue,
                             "The attention-map catalogue: one dict per traced attention map")
      .def("__repr__", [](const PyTrace& t) {
        return "<attention_atlas.Trace: " + std::to_string(t.result().trace.source_tokens.size()) + " tokens, " +
               std::to_string(t.names().size()) + " arrays>";
      });

  atlas::python::bind_figures(m, trace_class);
  atlas::python::bind_trace_analyses(m, trace_class);

  py::class_<PyModel> model_class(m, "Model");
  model_class
      .def_property_readonly("config", [](const PyModel& model) {
        return py::module_::import("json").attr("loads")(model.config_json());
      }, "The model's config (the JSON of config.json) as a dict")
      .def_property_readonly("name", [](const PyModel& model) { return model.model().config().name; })
      .def_property_readonly("backend", &PyModel::backend_name)
      .def_property_readonly("warnings", [](const PyModel& model) { return model.model().warnings(); })
      .def("tokenize", &PyModel::tokenize, py::arg("text"), "(ids, labels) of the text's tokens")
      .def("hook_names", [](const PyModel& model) {
        return atlas::python::hook_names(model.model(), model.stack());
      }, "Every name run(hooks=...) accepts")
      .def("run", [](const PyModel& model, py::object input, py::object target, bool scores, bool hidden,
                     bool qk, bool value_norms, py::object maps, py::object hooks, int threads,
                     std::optional<std::string> storage) {
        RunRequest r{input, target, scores, hidden, qk, value_norms, maps, storage, threads, hooks};
        return model.run(r);
      }, py::arg("input"), py::arg("target") = py::none(), py::arg("scores") = false,
         py::arg("hidden") = false, py::arg("qk") = false, py::arg("value_norms") = false,
         py::arg("maps") = "auto", py::arg("hooks") = py::none(), py::arg("threads") = 0,
         py::arg("storage") = py::none(),
         "Runs the model on a text or a list of token ids and returns its Trace")
      .def("__repr__", [](const PyModel& model) {
        return "<attention_atlas.Model " + model.model().config().name + " on " + model.backend_name() + ">";
      });
  atlas::python::bind_analyses(model_class);
  atlas::python::bind_panel_figures(m, model_class);
  atlas::python::bind_corpus(m, model_class);

  // The CLI's and the app's allocator policy (core/tensor/allocation_policy.h), which __init__.py
  // applies on import: without it each run page-faulted its maps afresh (3000 faults a run of
  // preset:tiny-decoder at 512 tokens, 3.7x the CLI's time).
  m.def("_keep_freed_memory_for_reuse", &atlas::keep_freed_memory_for_reuse);

  m.def("open", [](const std::string& spec, const std::string& backend, const std::string& device,
                   std::optional<uint64_t> seed) { return std::make_unique<PyModel>(spec, backend, device, seed); },
        py::arg("spec"), py::arg("backend") = "cpu", py::arg("device") = "", py::arg("seed") = py::none(),
        "Opens \"preset:NAME\", \"demo:NAME\", a model folder, a .safetensors or a .gguf file");
}
