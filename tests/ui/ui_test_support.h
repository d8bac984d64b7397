#pragma once
// Shared by the UI tests: one QApplication for the whole run and a small hand-built Trace
// whose numbers the tests know independently of the engine.
#include <catch2/catch.hpp>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QElapsedTimer>  // wall-clock-ok: waitUntil's deadline
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>
#include <cstdlib>

#include "core/model/trace.h"
#include "ui/panels/variant_panel.h"

namespace atlas::uitest {

// The offscreen platform's "does not support propagateSizeHints()" and similar chatter would
// bury real failures in the log.
inline void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtDebugMsg || type == QtInfoMsg) return;
  if (msg.contains("propagateSizeHints") || msg.startsWith("QStandardPaths:")) return;
  std::fprintf(stderr, "%s\n", msg.toLocal8Bit().constData());
}

inline QApplication* ensureApp() {
  static QApplication* app = [] {
    qInstallMessageHandler(quietQtMessages);
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    static int argc = 1;
    static char name[] = "atlas_ui_tests";
    static char* argv[] = {name, nullptr};
    auto* a = new QApplication(argc, argv);
    QApplication::setOrganizationName("AttentionAtlasTests");
    QApplication::setApplicationName("atlas_ui_tests");
    // Every run starts from the defaults: a run that crashed mid-test would otherwise leave its
    // choices (a Vulkan backend, maps on request) to the next run in the build tree's config.
    QSettings().clear();
    return a;
  }();
  return app;
}

// Runs the event loop until pred() holds or timeout_ms pass; returns whether it held. Use as
// REQUIRE(waitUntil(...)): QTest's QTRY_* macros report to QTest's logger and just return
// from a Catch test case, so a failed wait would pass silently.
template <class Pred>
bool waitUntil(Pred pred, int timeout_ms) {
  QElapsedTimer timer;  // wall-clock-ok: a deadline for waiting, never asserted on
  timer.start();
  while (!pred()) {
    if (timer.elapsed() > timeout_ms) return false;
    QTest::qWait(10);
  }
  return true;
}

// Value of head h, query i, key j in a hand-made [2, 3, 3] attention of layer l: rows sum to
// one, every cell distinct so a transposed or shifted read shows.
inline float handAttention(int l, int h, int i, int j) {
  static const float base[2][2][3][3] = {
      {{{0.7f, 0.2f, 0.1f}, {0.3f, 0.5f, 0.2f}, {0.15f, 0.25f, 0.6f}},
       {{0.1f, 0.1f, 0.8f}, {0.45f, 0.05f, 0.5f}, {0.33f, 0.33f, 0.34f}}},
      {{{0.6f, 0.3f, 0.1f}, {0.2f, 0.2f, 0.6f}, {0.05f, 0.9f, 0.05f}},
       {{0.25f, 0.25f, 0.5f}, {0.4f, 0.35f, 0.25f}, {0.12f, 0.18f, 0.7f}}}};
  return base[l][h][i][j];
}

// source "the cat sat"; two encoder layers of two heads; layer 1 masks key 2 for query 0;
// a decoder with target "le chat" (self [2,2,2] and cross [2,2,3]); P [3, 4]; the catalogue
// describing the five attention arrays.
inline Trace handTrace() {
  Trace t;
  t.source_tokens = {{11, "the"}, {12, "cat"}, {13, "sat"}};
  t.target_tokens = {{21, "le"}, {22, "chat"}};
  for (int l = 0; l < 2; ++l) {
    Tensor a({2, 3, 3});
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) a.data[(h * 3 + i) * 3 + j] = handAttention(l, h, i, j);
    Tensor m({3, 3}, 1.0f);
    if (l == 1) {
      m.data[0 * 3 + 2] = 0.0f;
      for (int h = 0; h < 2; ++h) a.data[(h * 3 + 0) * 3 + 2] = 0.0f;
    }
    t.add("encoder.layer" + std::to_string(l) + ".attn", "attention [heads, Lq, Lk]", a);
    t.add("encoder.layer" + std::to_string(l) + ".attn.mask", "mask [Lq, Lk]", m, DType::I32);
  }
  Tensor self({2, 2, 2});
  self.data = {1.0f, 0.0f, 0.4f, 0.6f, 1.0f, 0.0f, 0.7f, 0.3f};
  Tensor selfMask({2, 2});
  selfMask.data = {1, 0, 1, 1};
  t.add("decoder.layer0.self_attn", "decoder self-attention", self);
  t.add("decoder.layer0.self_attn.mask", "causal mask", selfMask, DType::I32);
  Tensor cross({2, 2, 3});
  cross.data = {0.1f, 0.6f, 0.3f, 0.2f, 0.2f, 0.6f, 0.5f, 0.25f, 0.25f, 0.9f, 0.05f, 0.05f};
  t.add("decoder.layer0.cross_attn", "cross-attention", cross);
  Tensor p({3, 4});
  p.data = {0.0f, 1.0f, 0.0f, 1.0f, 0.84f, 0.54f, 0.01f, 1.0f, 0.91f, -0.42f, 0.02f, 1.0f};
  t.add("positional", "P [L, d]", p);
  // The views read the attention-map catalogue a run fills; a hand-built trace gets the one a
  // dump from before the catalogue gets, derived from the array names.
  for (AttentionMap& m : derive_attention_maps(t)) t.describe_attention(std::move(m));
  t.finalize_attention_maps();
  return t;
}

// A 48 x 40 colour image whose pixels all differ (the image input of the model-switch tests).
inline QImage colourTestImage() {
  QImage img(48, 40, QImage::Format_RGB888);
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 48; ++x) img.setPixel(x, y, qRgb(5 * x, 6 * y, (x * y) % 256));
  return img;
}

// The bytes of the file at `path`; fails the test when it can't be read.
inline QByteArray readAll(const QString& path) {
  QFile f(path);
  REQUIRE(f.open(QIODevice::ReadOnly));
  return f.readAll();
}

// Writes `bytes` to `path` (a workspace edited by hand); fails the test when it can't.
inline void writeAll(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  REQUIRE(f.open(QIODevice::WriteOnly));
  REQUIRE(f.write(bytes) == bytes.size());
}

// The index of the panel's first plot whose name starts with `prefix`; fails the test if none.
inline int plotIndex(ui::VariantPanel& panel, const QString& prefix) {
  panel.ensureBuilt();
  for (size_t i = 0; i < panel.plots().size(); ++i)
    if (panel.plots()[i].name.startsWith(prefix)) return static_cast<int>(i);
  FAIL("no plot named " << prefix.toStdString());
  return -1;
}

}  // namespace atlas::uitest
