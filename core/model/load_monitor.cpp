#include "core/model/load_monitor.h"

#include <algorithm>

#include "core/tensor/error.h"

namespace atlas {

void LoadMonitor::step(const std::string& stage, double done, double total) const {
  if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled("model loading cancelled");
  if (!progress) return;
  const double f = total > 0 ? std::clamp(done / total, 0.0, 1.0) : 1.0;
  progress(from + (to - from) * f, stage);
}

LoadMonitor LoadMonitor::part(double begin, double end) const {
  LoadMonitor m = *this;
  m.from = from + (to - from) * begin;
  m.to = from + (to - from) * end;
  return m;
}

}  // namespace atlas
