#pragma once
// What the long-running tool panels (ablation sweep, activation patching, logit attribution)
// share about the run they belong to: whether two traces are of the same input (a result of
// other tokens is cleared), and how long a run takes, as a person reads it in a status line.
#include <QString>

#include "core/model/trace.h"

namespace atlas::ui {

// The same source and target token ids (null only equals null).
bool sameInputTokens(const Trace* a, const Trace* b);

// "less than 1 s", "12 s", "3 min 20 s", "1 h 5 min".
QString durationText(double seconds);

}  // namespace atlas::ui
