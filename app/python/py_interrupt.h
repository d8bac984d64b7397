#pragma once
// Ctrl-C during a long engine call made with the GIL released: Python's signal handler only
// flags the signal, so the engine's progress callback asks Python (taking the GIL) and turns a
// pending KeyboardInterrupt into the engine's cancel flag; the caller raises `error` afterwards.
#include <atomic>
#include <optional>
#include <pybind11/pybind11.h>

namespace atlas::python {

struct Interrupt {
  std::atomic<bool> cancel{false};
  std::optional<pybind11::error_already_set> error;

  // Called from the engine's progress callback (GIL not held).
  void check() {
    pybind11::gil_scoped_acquire gil;
    if (!error && PyErr_CheckSignals() != 0) {
      error.emplace();
      cancel = true;
    }
  }
};

}  // namespace atlas::python
