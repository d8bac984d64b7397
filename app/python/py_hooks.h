#pragma once
// Hooks from Python: a dict {hook name: fn} becomes the engine's ActivationHooks
// (core/model/activation_hooks.h). fn(activation) is called with the GIL held, on a copy of the
// activation it may keep; it returns a replacement of the same shape, or None (then its edits of
// the array it got, if any, are what the forward continues with).
#include <cstdint>
#include <optional>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module: casters must agree
#include <string>
#include <vector>

#include "app/python/tl_names.h"
#include "core/model/activation_hooks.h"

namespace atlas::python {

namespace py = pybind11;

class PythonHooks {
 public:
  // Throws py::key_error naming the nearest hook point for an unknown name, TypeError for a
  // value that is not callable.
  PythonHooks(const py::dict& hooks, const Model& model, const std::optional<SingleStack>& stack);
  ActivationHooks engine_hooks();
  // The Python exception a hook raised (or a KeyboardInterrupt seen between layers), to be
  // raised again once the forward has unwound.
  std::optional<py::error_already_set> error;
  // Throws AtlasError for a hook the forward never reached (a stack of its own kind that does
  // not call layer hooks), so a patch never silently does nothing.
  void check_all_called(const Model& model) const;

 private:
  struct Hook {
    std::string name;
    HookPoint point;
    py::object fn;
    int64_t calls = 0;
  };
  void call(Hook& hook, Tensor& activation);
  std::vector<Hook> hooks_;
  const Model* model_;  // the model the forward runs (norm scales read its norms' parameters)
};

// Thrown through the engine when a Python hook raised: the forward unwinds, then the hook's own
// exception (PythonHooks::error) is raised.
struct PythonHookFailed : std::exception {
  const char* what() const noexcept override { return "a Python hook raised an exception"; }
};

}  // namespace atlas::python
