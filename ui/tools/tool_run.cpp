#include "ui/tools/tool_run.h"

#include <chrono>
#include <cmath>

namespace atlas::ui {

bool sameInputTokens(const Trace* a, const Trace* b) {
  if (!a || !b) return a == b;
  return token_ids(a->source_tokens) == token_ids(b->source_tokens) &&
         token_ids(a->target_tokens) == token_ids(b->target_tokens);
}

QString durationText(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "an unknown time";
  if (seconds < 1) return "less than 1 s";
  const long long s = std::llround(seconds);
  if (s < 60) return QString("%1 s").arg(s);
  if (s < 3600) return s % 60 ? QString("%1 min %2 s").arg(s / 60).arg(s % 60) : QString("%1 min").arg(s / 60);
  const long long m = (s + 30) / 60;  // to the minute
  return m % 60 ? QString("%1 h %2 min").arg(m / 60).arg(m % 60) : QString("%1 h").arg(m / 60);
}

QString estimateText(int64_t forwards, double forwardSeconds) {
  return QString("%1 forwards at about %2 s each (one measured): about %3")
      .arg(forwards)
      .arg(forwardSeconds, 0, 'g', 2)
      .arg(durationText(forwardSeconds * double(forwards)));
}

double timeOneForward(const Model& model, const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target,
                      const RunOptions& base) {
  RunOptions o = base;
  o.trace = TraceOptions::none();
  const auto t0 = std::chrono::steady_clock::now();
  model.forward(source, target, o);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace atlas::ui
