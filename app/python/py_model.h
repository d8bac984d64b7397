#pragma once
// A model opened from Python: the engine's Model (core/formats/model_io.h opens every spec the
// CLI does) with the backend it runs on.
#include <cstdint>
#include <memory>
#include <optional>
#include <pybind11/pybind11.h>
#include <string>

#include "app/python/py_trace.h"
#include "app/python/tl_names.h"
#include "core/model/model.h"

namespace atlas::python {

namespace py = pybind11;

struct RunRequest {
  py::object input;   // str, or a sequence of token ids
  py::object target;  // None, str or ids: the decoder input of an encoder-decoder model
  bool scores = false, hidden = false, qk = false, value_norms = false;
  py::object maps;    // "auto" | "stored" | "on-demand", a list of map names (TraceOptions::only_maps); unset: "auto"
  std::optional<std::string> storage;  // with a list of maps: "auto" | "stored" | "on-demand"
  int threads = 0;
  py::object hooks;  // None or {name: fn}
};

class PyModel {
 public:
  // "preset:NAME", "demo:NAME", a model folder, a .safetensors or .gguf file; backend "cpu",
  // "vulkan" or "auto" (Vulkan when a non-CPU device exists). Runs with the GIL released.
  PyModel(const std::string& spec, const std::string& backend, const std::string& device,
          std::optional<uint64_t> seed);
  const Model& model() const { return *model_; }
  const std::string& spec() const { return spec_; }  // as given to open()
  const std::string& backend_name() const { return backend_name_; }
  const std::optional<SingleStack>& stack() const { return stack_; }
  std::string config_json() const;
  std::pair<std::vector<int32_t>, std::vector<std::string>> tokenize(const std::string& text) const;
  std::unique_ptr<PyTrace> run(const RunRequest& request) const;
  // The tokens of a text (tokenized as `atlas run --text` does) or of a sequence of token ids;
  // `what` names the argument in errors.
  std::vector<TokenInfo> tokens_of(const py::object& input, const char* what) const;
  // Options for an analysis: the model's backend, all threads.
  RunOptions analysis_options() const;

 private:
  std::vector<TokenInfo> tokens_of_ids(const py::handle& ids, const char* what) const;
  // Declared first, destroyed last: the model's uploaded weights may be on this backend.
  std::unique_ptr<Backend> backend_;
  std::string backend_name_ = "cpu";
  std::string spec_;
  std::unique_ptr<Model> model_;
  std::optional<SingleStack> stack_;
};

}  // namespace atlas::python
