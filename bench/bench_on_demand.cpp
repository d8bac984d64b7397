// Full attention at 16k tokens with maps computed on request (core/model/attention_on_demand.h):
// preset long-16k (d 256, 4 heads, 2 layers, causal, max_positions 16384) run on 16384 bytes,
// then what the app does with it: the overview of one head, an exact window as the heatmap
// zooms in, and heatmap frames while zooming. Peak RSS of the whole process (the acceptance
// bound is 2 GB) and times, each beside a baseline measured in the same run: the dense GEMM
// rate of this machine and the same model storing its maps at 2048 tokens.
// With --model SPEC (e.g. an 8B-shaped GGUF from bench/make_llama_gguf) the run is that model's
// forward over N tokens of the same text with maps on request, and the stored baseline is skipped:
// a head's full map (the overview) and the zoom are then timed against the forward's per-head
// share.
//   bench_on_demand [--length N] [--grab DIR] [--model SPEC] [--layer K] [--head H]
//   (DIR: PNGs of the overview and a zoomed window)
#include <QApplication>
#include <QElapsedTimer>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench_timing.h"
#include "core/formats/model_io.h"
#include "core/model/attention_on_demand.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "ui/views/attention_heatmap.h"
#include "ui/views/attention_selection.h"
#include "ui/views/heatmap_data.h"
#include "ui/views/heatmap_view.h"

using namespace atlas;
using atlas::bench::median_ms;
using atlas::bench::ms_since;

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

std::string text_of(int64_t n) {
  std::string t;
  while (int64_t(t.size()) < n) t += "It was the best of times, it was the worst of times; ";
  return t.substr(0, size_t(n));
}

// GFLOP/s of a [1024, 64] x [64, 4096] float product (an attention block's shape), this run.
double gemm_gflops() {
  Mat a = Mat::Random(1024, 64), b = Mat::Random(4096, 64), c(1024, 4096);
  const double ms = median_ms(5, [&] { c.noalias() = a * b.transpose(); });
  return 2.0 * 1024 * 4096 * 64 / (ms * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t length = 16384;
  std::string grab, spec;
  int layer = 1, head = 2;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--length") == 0) length = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--grab") == 0) grab = argv[i + 1];
    if (std::strcmp(argv[i], "--model") == 0) spec = argv[i + 1];
    if (std::strcmp(argv[i], "--layer") == 0) layer = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--head") == 0) head = std::atoi(argv[i + 1]);
  }
  if (!std::getenv("DISPLAY") && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);

  auto t0 = std::chrono::steady_clock::now();
  const Model model = spec.empty() ? [] {
    const ModelConfig c = preset_config("long-16k");
    return Model(c, init_params(c, 1));
  }() : load_model(spec);
  const ModelConfig& c = model.config();
  if (!spec.empty()) std::printf("%s opened in %.0f ms\n", spec.c_str(), ms_since(t0));
  const double gflops = gemm_gflops();
  std::printf("dense GEMM [1024x64]x[64x4096]: %.1f GFLOP/s\n", gflops);

  // Baseline: the same model storing its maps at 2048 tokens.
  double stored_ms = 0;
  if (spec.empty()) {
    RunOptions stored;
    stored.trace.maps = MapStorage::Stored;
    t0 = std::chrono::steady_clock::now();
    model.run(text_of(2048), "", stored);
    stored_ms = ms_since(t0);
    std::printf("stored maps, 2048 tokens: forward %.0f ms\n", stored_ms);
  }

  // Exactly `length` tokens of the text (a BPE model takes fewer tokens than bytes).
  std::vector<TokenInfo> tokens = model.tokenize(text_of(8 * length), "").first;
  if (int64_t(tokens.size()) < length) {
    std::fprintf(stderr, "the text gives only %zu tokens\n", tokens.size());
    return 1;
  }
  tokens.resize(size_t(length));
  RunOptions on_demand;
  on_demand.trace.maps = MapStorage::OnDemand;
  t0 = std::chrono::steady_clock::now();
  const RunResult r = model.forward(tokens, {}, on_demand);
  const double forward_ms = ms_since(t0);
  // Causal attention: q k^T and p v over half the L^2 cells, per head and layer.
  const double attn_flop = 2.0 * 2.0 * double(length) * double(length) / 2 * double(c.d_head()) *
                           double(c.n_heads) * double(c.n_layers);
  const AttentionMap& m = r.trace.attention_maps.at(size_t(layer));
  std::printf("on-demand maps, %lld tokens: forward %.0f ms (%.1fx the stored run at 2048 tokens; "
              "attention alone at the GEMM rate would take %.0f ms); maps on request: %s; peak RSS %.0f MB\n",
              (long long)length, forward_ms, stored_ms > 0 ? forward_ms / stored_ms : 0.0,
              attn_flop / (gflops * 1e6), m.on_demand ? "yes" : "NO", peak_rss_mb());

  ui::AttentionSelection sel{"decoder", "self_attn", layer, head, 0};
  t0 = std::chrono::steady_clock::now();
  const ui::HeatmapData overview = ui::attentionHeatmap(r.trace, sel);
  const double overview_ms = ms_since(t0);
  std::printf("overview of one head (%d x %d blocks of %d): %.0f ms (%.2fx the forward's per-head share)\n",
              overview.rows, overview.cols, overview.rowStep, overview_ms,
              overview_ms / (forward_ms / double(c.n_heads * c.n_layers)));

  ui::HeatmapView view;
  view.resize(1000, 900);
  view.setData(overview);
  view.show();
  QApplication::processEvents();
  if (!grab.empty()) view.grab().save(QString::fromStdString(grab + "/on_demand_overview.png"));
  // Zoom in step by step (x1.25 per wheel notch) towards a point deep in the map, then pan
  // back towards the start; a frame is the zoom or pan step plus the repaint. Exact windows are
  // computed on a worker thread: their latency is from the step that asked for one to the
  // repaint showing it.
  std::vector<double> frames, latencies;
  QElapsedTimer asked;
  QObject::connect(&view, &ui::HeatmapView::detailReady, [&] {
    view.repaint();
    latencies.push_back(asked.nsecsElapsed() / 1e6);
  });
  auto frame = [&](auto&& step) {
    const bool pending = view.detailPending();
    QElapsedTimer t;
    t.start();
    step();
    view.repaint();
    frames.push_back(t.nsecsElapsed() / 1e6);
    if (!pending && view.detailPending()) asked.start();
    // What a user's pause between wheel notches gives the worker: 30 ms of events.
    QElapsedTimer idle;
    idle.start();
    while (idle.elapsed() < 30) QApplication::processEvents(QEventLoop::AllEvents, 5);
  };
  const QPointF anchor(650, 600);
  for (int step = 0; step < 18; ++step) frame([&] { view.zoomBy(1.25, anchor); });  // to ~300 tokens
  for (int step = 0; step < 20; ++step)
    frame([&] {
      const QRectF w = view.matrixWindow();
      view.setMatrixWindow(w.translated(-w.width() / 3, -w.height() / 3));
      view.setViewWindow(view.viewWindow());
    });
  while (view.detailPending()) QApplication::processEvents(QEventLoop::AllEvents, 5);
  if (!grab.empty()) view.grab().save(QString::fromStdString(grab + "/on_demand_window.png"));
  std::printf("zoom/pan frames: median %.1f ms, max %.1f ms (%zu frames, bound 16 ms)\n", bench::median(frames),
              *std::max_element(frames.begin(), frames.end()), frames.size());
  std::printf("exact windows: %zu computed, latency median %.0f ms, max %.0f ms (the overview stands in)\n",
              latencies.size(), bench::median(latencies),
              latencies.empty() ? 0.0 : *std::max_element(latencies.begin(), latencies.end()));
  std::printf("peak RSS of the whole run: %.0f MB (bound 2048 MB)\n", peak_rss_mb());
  return 0;
}
