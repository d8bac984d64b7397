#pragma once
// What the long-running tool panels (ablation sweep, activation patching, logit attribution)
// share about the run they belong to: whether two traces are of the same input (a result of
// other tokens is cleared), and how long a run takes, as a person reads it in a status line.
#include <QString>
#include <QtConcurrent/QtConcurrent>
#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/model/model.h"
#include "core/model/trace.h"
#include "core/tensor/error.h"

namespace atlas::ui {

// The same source and target token ids (null only equals null).
bool sameInputTokens(const Trace* a, const Trace* b);

// "less than 1 s", "12 s", "3 min 20 s", "1 h 5 min".
QString durationText(double seconds);

// The plan a grid of forwards (patching, ablation sweep) shows before it starts: one untraced
// forward of the input, timed on the worker, times the grid's forwards. An estimate above the
// limit is shown and the grid starts on the next press; a new model or input forgets the measure.
struct LongRunGate {
  double forwardSeconds = -1;  // one forward of the current model and input; < 0: not measured
  double limitSeconds = 20;
  bool confirmed = false;      // the long estimate was shown: the next press runs

  void forget() {
    forwardSeconds = -1;
    confirmed = false;
  }
  bool isLong(int64_t forwards) const { return forwardSeconds >= 0 && forwardSeconds * double(forwards) > limitSeconds; }
  // At a press: whether the press before showed the estimate (then this one runs); consumes it.
  bool takeConfirmation() { return std::exchange(confirmed, false); }
};

// "10 forwards at about 0.5 s each (one measured): about 5 s".
QString estimateText(int64_t forwards, double forwardSeconds);

// Seconds of one untraced forward of these tokens, honouring base's cancel flag and threads.
double timeOneForward(const Model& model, const std::vector<TokenInfo>& source, const std::vector<TokenInfo>& target,
                      const RunOptions& base);

// A one-call analysis run off the GUI thread (logit attribution, QK decomposition): its result,
// or the text the panel shows instead.
template <class R>
struct ToolOutcome {
  std::optional<R> result;
  QString error;
};
// compute(options) on a pool thread, the options carrying `cancel`: a Cancelled run gives
// `cancelledText`, any other exception its message.
template <class R, class F>
QFuture<ToolOutcome<R>> runTool(std::shared_ptr<std::atomic<bool>> cancel, QString cancelledText, F compute) {
  return QtConcurrent::run([cancel = std::move(cancel), cancelledText = std::move(cancelledText),
                            compute = std::move(compute)] {
    ToolOutcome<R> out;
    RunOptions o;
    o.cancel = cancel.get();
    try {
      out.result = compute(o);
    } catch (const Cancelled&) {
      out.error = cancelledText;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    }
    return out;
  });
}

}  // namespace atlas::ui
