#pragma once
// The Trace of one run as seen from Python: its arrays as numpy arrays over the engine's own
// buffers (no copy), their meanings, tokens, and the attention-map catalogue as dicts.
#include <map>
#include <memory>
#include <optional>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree
#include <string>
#include <vector>

#include "app/python/tl_names.h"
#include "core/model/model.h"

namespace atlas::python {

namespace py = pybind11;

class PyTrace {
 public:
  PyTrace(std::shared_ptr<const RunResult> result, std::optional<SingleStack> stack)
      : result_(std::move(result)), stack_(std::move(stack)) {}

  const RunResult& result() const { return *result_; }
  std::shared_ptr<const RunResult> shared_result() const { return result_; }
  std::vector<std::string> names() const { return result_->trace.names(); }
  // Trace names, then the TransformerLens aliases the trace can answer.
  std::vector<std::string> aliases() const;
  bool contains(const std::string& name) const;
  // `self` is this trace's Python object: every array's base, which keeps the run alive.
  // Throws py::key_error naming the nearest name for a name neither traced nor an alias.
  py::array get(const py::object& self, const std::string& name);
  std::string meaning(const std::string& name) const;
  py::list catalogue() const;
  // Trace.map(name, head=None, rows=None): an attention map's weights as a new float32 array,
  // whatever its storage: dense (copied), CSR (zeros off the pattern) or on demand (computed from
  // the traced queries and keys, attention_on_demand.h). head: None (every head, [heads, rows, Lk]),
  // an index, "mean" or "max" ([rows, Lk]); rows: None, an index (that axis dropped) or a slice.
  py::array_t<float> map(const std::string& name, const py::object& head, const py::object& rows) const;
  std::vector<std::string> token_labels(bool target) const;
  std::vector<int32_t> token_ids(bool target) const;

 private:
  const TracedArray& resolve(const std::string& name, std::vector<int64_t>* view_shape) const;
  const AttentionMap& catalogued_map(const std::string& name) const;
  std::shared_ptr<const RunResult> result_;
  std::optional<SingleStack> stack_;
  // int32 arrays: the engine keeps their integral values in float tensors; each is converted
  // once, on its first read, and later reads share it.
  std::map<std::string, std::unique_ptr<std::vector<int32_t>>> ints_;
};

}  // namespace atlas::python
