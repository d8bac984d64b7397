#pragma once
// What a long model load reports and how it is stopped. Opening an 8B file is seconds of page
// faults (every weight's scales are scanned for NaN, core/model/params.h) and, from a cold disk,
// tens of seconds of reading: the app shows a progress bar with Cancel (ui/run_controller.h), the
// CLI shows nothing. The loaders call step() between tensors, never inside one.
#include <atomic>
#include <functional>
#include <string>

namespace atlas {

struct LoadMonitor {
  std::function<void(double fraction, const std::string& stage)> progress;  // on the loading thread
  const std::atomic<bool>* cancel = nullptr;  // set by the caller; the load throws Cancelled
  double from = 0.0, to = 1.0;                // the part of the whole load this monitor reports

  // `done` of `total` units of this monitor's part. Throws Cancelled when the caller asked to stop.
  void step(const std::string& stage, double done, double total) const;
  // [begin, end) of this monitor's part (fractions of it) as a monitor of its own.
  LoadMonitor part(double begin, double end) const;
};

// The monitor's step, or nothing when there is no monitor (the CLI, tests).
inline void load_step(const LoadMonitor* m, const std::string& stage, double done, double total) {
  if (m) m->step(stage, done, total);
}

}  // namespace atlas
