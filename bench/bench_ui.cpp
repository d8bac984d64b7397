// UI benchmark (not a test): prints milliseconds.
//  1. keystroke -> repainted heatmap in the real window, vanilla-base, 64 and 512 tokens:
//     from a key press in the input box to the end of the heatmap's paint of the new trace
//     (debounce + forward on the worker + view update + paint).
//  2. per-frame repaint of a 4096 x 4096 heatmap while zooming (drawn from the pyramid).
// Runs under any Qt platform; QT_QPA_PLATFORM=offscreen is set when no display is present.
//   bench_ui [--model SPEC] [--repeats N]
#include <QApplication>
#include <QElapsedTimer>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/formats/model_io.h"
#include "core/tensor/allocation_policy.h"
#include "ui/views/heatmap_view.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "ui/panels/variant_plots.h"
#include "ui/panels/panel_registry.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// `n` bytes of prose (the byte-level presets make one token per byte).
QString textOfLength(int n) {
  const QString words = "the quick brown fox jumps over the lazy dog while attention flows ";
  QString s;
  while (s.size() < n) s += words;
  return s.left(n);
}

// Text of exactly `tokens` tokens under `model`'s tokenizer: bytes of prose for the byte-level
// presets, words for a BPE or WordPiece model (one token per common word).
QString textOfTokens(const Model& model, int tokens) {
  const Tokenizer& tok = model.tokenizer();
  const QString words = " the quick brown fox jumps over the lazy dog while attention flows";
  QString s = textOfLength(tokens);
  if (static_cast<int>(tok.encode(s.toStdString()).size()) == tokens) return s;
  s.clear();
  for (int i = 0; static_cast<int>(tok.encode(s.toStdString()).size()) < tokens; ++i)
    s += words.section(' ', 1 + i % 12, 1 + i % 12).prepend(' ');
  return s;
}

void benchKeystroke(const QString& spec, int tokens, int repeats) {
  const Model probe = load_model(spec.toStdString());
  MainWindow w;
  w.resize(1280, 800);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText(textOfTokens(probe, tokens - 1));
  w.loadModel(spec);
  if (!shown.wait(300000)) {
    std::printf("keystroke_to_repaint model=%s tokens=%d: no run (%s)\n", qPrintable(spec), tokens,
                qPrintable(w.lastError()));
    return;
  }
  auto* edit = w.findChild<QPlainTextEdit*>("sourceEdit");
  HeatmapView* view = w.findChild<HeatmapView*>("heatmap");
  // Ordering of the signals after a keystroke: the views are updated before traceShown is
  // emitted and paint later, in the event loop.
  int events = 0, shownAt = 0, paintedAt = 0;
  QObject::connect(&w, &MainWindow::traceShown, [&] { shownAt = ++events; });
  QObject::connect(view, &HeatmapView::painted, [&] { paintedAt = ++events; });
  std::vector<double> total, forward, queue, overhead;
  for (int r = 0; r < repeats + 1; ++r) {  // first one warms up
    edit->setFocus();
    edit->moveCursor(QTextCursor::End);
    // Alternate add / remove of one character, so the length stays at `tokens` +- 1 (a BPE
    // model may keep the token count and change the last token instead).
    const bool add = r % 2 == 0;
    // An isolated keystroke: the user paused longer than the debounce, so the run starts at
    // once (a keystroke within the debounce of the previous one waits for the typing to stop,
    // by design: run_controller.h).
    QTest::qWait(w.findChild<RunController*>("runController")->debounceMs() + 20);
    shownAt = paintedAt = 0;
    QElapsedTimer t;
    t.start();
    QTest::keyClick(edit, add ? Qt::Key_S : Qt::Key_Backspace);
    // Done when the heatmap has painted after the new trace was shown.
    while (!(shownAt > 0 && paintedAt > shownAt) && t.elapsed() < 300000)
      QTest::qWait(1);
    const double ms = t.nsecsElapsed() / 1e6;
    if (r > 0) {
      total.push_back(ms);
      forward.push_back(w.findChild<RunController*>("runController")->lastRunMs());
      queue.push_back(w.findChild<RunController*>("runController")->lastQueueMs());
      overhead.push_back(ms - forward.back() - queue.back());  // what the UI adds
      if (std::getenv("ATLAS_BENCH_VERBOSE"))
        std::printf("  sample: total %.1f ms, queue %.1f, forward %.1f, reused %lld tokens\n", ms,
                    queue.back(), forward.back(), (long long)w.findChild<RunController*>("runController")->lastReusedTokens());
    }
  }
  std::printf("keystroke_to_repaint model=%s tokens=%d median_ms=%.1f (queue %.1f + forward %.1f + ui %.1f)\n",
              qPrintable(spec), tokens, median(total), median(queue), median(forward), median(overhead));
}

void benchZoom(int n, int frames) {
  HeatmapData d;
  d.rows = d.cols = n;
  d.values.resize(static_cast<size_t>(n) * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int i = 0; i < n; ++i) {  // a banded "attention" with noise
    for (int j = 0; j < n; ++j)
      d.values[static_cast<size_t>(i) * n + j] = std::exp(-std::abs(i - j) / 40.0f) + 0.05f * u(rng);
    d.rowLabels << QString("t%1").arg(i);
    d.colLabels << QString("t%1").arg(i);
  }
  d.rowAxis = "query";
  d.colAxis = "key";
  HeatmapView v;
  v.resize(1000, 900);
  QElapsedTimer t;
  t.start();
  v.setData(std::move(d));
  const double buildMs = t.nsecsElapsed() / 1e6;
  v.show();
  QApplication::processEvents();
  v.repaint();
  std::vector<double> paint, frame;
  const QPointF centre(500, 450);
  for (int f = 0; f < frames; ++f) {
    // Zoom in for the first half, back out for the second: every pyramid level is visited.
    const double factor = f < frames / 2 ? 1.15 : 1.0 / 1.15;
    QElapsedTimer ft;
    ft.start();
    v.zoomBy(factor, centre);
    v.repaint();  // synchronous paint into the backing store
    frame.push_back(ft.nsecsElapsed() / 1e6);
    paint.push_back(v.lastPaintMs());
  }
  std::sort(frame.begin(), frame.end());
  std::printf("zoom_repaint n=%d pyramid_build_ms=%.1f frames=%d median_frame_ms=%.2f p95_frame_ms=%.2f max_frame_ms=%.2f\n",
              n, buildMs, frames, median(frame), frame[frame.size() * 95 / 100], frame.back());
}

// The Predictions panel on GPT-2-sized logits [512, 50257]: the first build after a run (top-5
// of every position: 25.7M exponentials) against a selection change on the same run (the
// per-position table comes from its cache; only the selected row is ranked again).
void benchPredictions(int repeats) {
  const int L = 512, V = 50257;
  Trace trace;
  Tensor logits({L, V});
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (float& x : logits.data) x = n(rng);
  trace.add("logits", "", std::move(logits));
  const PanelProvider p = predictionsProvider();
  std::vector<double> first, select;
  for (int r = 0; r < repeats; ++r) {
    trace.arrays[0].tensor.data[0] += 1.0f;  // a "new run": the cache must not answer
    PanelContext ctx;
    QElapsedTimer t;
    t.start();
    p.plots(trace, ctx);
    first.push_back(t.nsecsElapsed() / 1e6);
    ctx.query = r * 37 % L;
    t.restart();
    p.plots(trace, ctx);
    select.push_back(t.nsecsElapsed() / 1e6);
  }
  std::printf("predictions_panel tokens=%d vocab=%d first_build_median_ms=%.1f selection_change_median_ms=%.1f\n",
              L, V, median(first), median(select));
}

}  // namespace

// Keeps Qt's start-up chatter out of the figures.
void quiet(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtDebugMsg || type == QtInfoMsg || msg.startsWith("QStandardPaths:") ||
      msg.contains("propagateSizeHints"))
    return;
  std::fprintf(stderr, "%s\n", qPrintable(msg));
}

int main(int argc, char** argv) {
  keep_freed_memory_for_reuse();  // as app/gui_main.cpp
  qInstallMessageHandler(quiet);
  if (!std::getenv("DISPLAY") && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QString spec = "preset:vanilla-base";
  int repeats = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--model")) spec = argv[++i];
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[++i]);
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("AttentionAtlasBench");
  QApplication::setApplicationName("bench_ui");
  std::printf("platform=%s\n", qPrintable(QApplication::platformName()));
  benchKeystroke(spec, 64, repeats);
  benchKeystroke(spec, 512, std::max(3, repeats / 2));
  benchZoom(4096, 60);
  benchPredictions(std::max(3, repeats / 2));
  return 0;
}
