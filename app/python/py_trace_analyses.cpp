// compare and search on Traces (py_trace_analyses.h).
#include "app/python/py_trace_analyses.h"

#include <pybind11/numpy.h>

#include "core/analysis/attention_compare.h"
#include "core/analysis/token_search.h"
#include "core/tensor/error.h"

namespace atlas::python {

namespace {

// Where a row of a result lies: the map's name and its place in the model.
py::dict map_place(const AttentionMap& m, int64_t head) {
  py::dict d;
  d["map"] = m.array;
  d["stack"] = m.stack;
  d["sublayer"] = m.sublayer;
  d["layer"] = m.layer;
  d["segment"] = m.segment >= 0 ? py::object(py::int_(m.segment)) : py::object(py::none());
  d["step"] = m.step >= 0 ? py::object(py::int_(m.step)) : py::object(py::none());
  d["head"] = head;
  return d;
}

py::list compare_traces(const PyTrace& a, const PyTrace& b) {
  std::vector<HeadDifference> rows;
  {
    py::gil_scoped_release unlocked;
    rows = compare_attention(a.result().trace, b.result().trace);
  }
  py::list out;
  for (const HeadDifference& r : rows) {
    py::dict d = map_place(r.map, r.head);
    d["mean_tv"] = r.mean_tv;
    d["max_abs"] = r.max_abs;
    out.append(d);
  }
  return out;
}

py::array_t<float> difference(const PyTrace& a, const PyTrace& b, const std::string& name, int64_t head) {
  const Tensor t = attention_difference(a.result().trace, b.result().trace, name, head);
  py::array_t<float> out(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  std::copy(t.data.begin(), t.data.end(), out.mutable_data());
  return out;
}

py::list search(const PyTrace& t, const std::string& query, const std::string& key) {
  std::vector<TokenLinkScore> rows;
  {
    py::gil_scoped_release unlocked;
    rows = search_token_links(t.result().trace, query, key);
  }
  py::list out;
  for (const TokenLinkScore& r : rows) {
    py::dict d = map_place(r.map, r.head);
    d["score"] = r.score;
    d["queries"] = r.queries;
    d["best_query"] = r.best_query;
    d["best_key"] = r.best_key;
    d["best_weight"] = r.best_weight;
    out.append(d);
  }
  return out;
}

}  // namespace

void bind_trace_analyses(py::module_& m, py::class_<PyTrace>& trace_class) {
  m.def("compare", &compare_traces, py::arg("a"), py::arg("b"),
        "atlas compare's per-head distances between two runs of the same token count (two inputs on one "
        "model, or one input on two models of the same shape): one dict per map and head, in A's catalogue "
        "order: map, stack, sublayer, layer, segment, step, head, mean_tv (mean over query rows of the total "
        "variation distance, 0..1) and max_abs (the largest |A_ij - B_ij|)");
  trace_class.def("difference", &difference, py::arg("other"), py::arg("name"), py::arg("head"),
                  "A - B of one head's map [Lq, Lk] (this trace A, other B), as atlas compare draws it");
  trace_class.def("search", &search, py::arg("query"), py::arg("key"),
                  "atlas search's token search: every head scored by the attention the queries matching `query` "
                  "put on the keys matching `key` (token patterns: case-insensitive, a word's marks dropped, "
                  "'run*' by prefix, '*' every token), highest score first: map, stack, sublayer, layer, "
                  "segment, step, head, score, queries, best_query, best_key, best_weight");
}

}  // namespace atlas::python
