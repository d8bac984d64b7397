#include "ui/tools/tool_run.h"

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

}  // namespace atlas::ui
