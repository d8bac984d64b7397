// The NTM explorer panel (ui/panels/ntm/ntm_panel.h): its sliders change the addressing as the
// equations say (checked with naive loops here), and its exports are valid files.
#include <catch2/catch.hpp>

#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QSlider>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <cmath>

#include <QAction>
#include <QSignalSpy>

#include "ui/main_window/main_window.h"
#include "ui/panels/ntm/ntm_panel.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "ui/panels/sagan/sagan_overlay.h"
#include "tests/ui/ui_test_support.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

namespace {

QSlider* slider(NtmPanel& p, const char* name) {
  auto* s = p.findChild<QSlider*>(name);
  REQUIRE(s);
  return s;
}

}  // namespace

TEST_CASE("NTM panel: gamma slider sharpens the shifted weights by w^gamma / sum", "[ui][ntm]") {
  ensureApp();
  NtmPanel panel;
  panel.setStep(2);
  panel.setHead(0);  // read0
  // Spread the shift so the shifted weights are not one-hot: -1, 0, +1 at 1:2:1.
  slider(panel, "ntmShiftMinus")->setValue(25);
  slider(panel, "ntmShiftZero")->setValue(50);
  slider(panel, "ntmShiftPlus")->setValue(25);
  slider(panel, "ntmBeta")->setValue(20);  // beta 2: a soft content match
  const NtmAddressing before = panel.run().steps[2].addressing[0];
  REQUIRE(panel.controls(2, 0).shift[0] == Approx(0.25));
  // Naive circular convolution of the gated weights with [0.25, 0.5, 0.25].
  const int64_t N = before.gated.size();
  for (int64_t i = 0; i < N; ++i) {
    const double want = 0.25 * before.gated[(i + 1) % N] + 0.5 * before.gated[i] + 0.25 * before.gated[(i - 1 + N) % N];
    REQUIRE(before.shifted[i] == Approx(want).margin(1e-6));
  }
  REQUIRE(slider(panel, "ntmGamma")->value() == 10);  // gamma 1: sharpened == shifted
  for (int64_t i = 0; i < N; ++i) REQUIRE(before.sharpened[i] == Approx(before.shifted[i]).margin(1e-6));

  slider(panel, "ntmGamma")->setValue(30);  // gamma = 3
  const NtmAddressing after = panel.run().steps[2].addressing[0];
  double z = 0;
  for (int64_t i = 0; i < N; ++i) z += std::pow(double(after.shifted[i]), 3.0);
  double maxBefore = 0, maxAfter = 0;
  for (int64_t i = 0; i < N; ++i) {
    REQUIRE(after.shifted[i] == Approx(before.shifted[i]).margin(1e-6));  // gamma acts last
    REQUIRE(after.sharpened[i] == Approx(std::pow(double(after.shifted[i]), 3.0) / z).margin(1e-6));
    maxBefore = std::max(maxBefore, double(before.sharpened[i]));
    maxAfter = std::max(maxAfter, double(after.sharpened[i]));
  }
  REQUIRE(maxAfter > maxBefore);  // sharper
}

TEST_CASE("NTM panel: gate 0 follows the previous step's weights; erase text edits the write", "[ui][ntm]") {
  ensureApp();
  NtmPanel panel;
  panel.setStep(1);
  panel.setHead(0);
  slider(panel, "ntmGate")->setValue(0);
  slider(panel, "ntmShiftMinus")->setValue(0);
  slider(panel, "ntmShiftZero")->setValue(0);
  slider(panel, "ntmShiftPlus")->setValue(100);
  const RowVec prev = panel.run().steps[0].addressing[0].sharpened;
  const RowVec shifted = panel.run().steps[1].addressing[0].shifted;
  const int64_t N = prev.size();
  for (int64_t i = 0; i < N; ++i) REQUIRE(shifted[i] == Approx(prev[(i - 1 + N) % N]).margin(1e-6));

  // The write head at step 0 visits slot 1 (w_0 = slot 0, shift +1) with erase 1: erase 0 keeps
  // the old row and only adds.
  panel.setStep(0);
  panel.setHead(1);
  auto* erase = panel.findChild<QLineEdit*>("ntmErase");
  REQUIRE(erase);
  erase->setText("0, 0, 0, 0");
  emit erase->editingFinished();
  const NtmRun& run = panel.run();
  const RowVec add = panel.controls(0, 1).add;
  for (int64_t j = 0; j < add.size(); ++j)
    REQUIRE(run.memory[1](1, j) == Approx(run.memory[0](1, j) + add[j]).margin(1e-6));
}

TEST_CASE("NTM panel exports valid PNG, SVG and .npy files", "[ui][ntm][export]") {
  ensureApp();
  NtmPanel panel;
  QTemporaryDir dir;
  const QString png = dir.filePath("ntm.png"), svg = dir.filePath("ntm.svg"), npy = dir.filePath("ntm.npy");
  panel.exportTo(png);
  const QImage img(png);
  REQUIRE(!img.isNull());
  REQUIRE(img.width() == 1500);  // 10 in at 150 dpi
  panel.exportTo(svg);
  QFile f(svg);
  REQUIRE(f.open(QIODevice::ReadOnly));
  QXmlStreamReader xml(&f);
  bool sawSvg = false;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement() && xml.name() == QStringLiteral("svg")) sawSvg = true;
  }
  REQUIRE(!xml.hasError());
  REQUIRE(sawSvg);
  panel.exportTo(npy);
  QFile n(npy);
  REQUIRE(n.open(QIODevice::ReadOnly));
  const QByteArray bytes = n.readAll();
  REQUIRE(bytes.startsWith("\x93NUMPY"));
  REQUIRE(bytes.contains("'shape': (4, 8)"));
  REQUIRE_THROWS_WITH(panel.exportTo(dir.filePath("ntm.bmp")), Catch::Matchers::Contains("unknown export format"));
}

TEST_CASE("the main window runs ntm-small and sagan-small and opens both explorers", "[ui][ntm][sagan]") {
  ensureApp();
  MainWindow w;
  w.resize(1000, 700);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("abc");
  for (const char* preset : {"preset:ntm-small", "preset:sagan-small"}) {
    INFO(preset);
    shown.clear();
    w.loadModel(preset);
    REQUIRE(shown.wait(30000));
    REQUIRE(w.trace());
  }
  REQUIRE(w.trace()->find("sagan.attention"));
  for (const QString& text : {QString("Neural &Turing Machine explorer\u2026"), QString("&Self-Attention GAN explorer\u2026")}) {
    QAction* action = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
      if (a->text() == text) action = a;
    REQUIRE(action);
    action->trigger();
  }
  REQUIRE(w.findChild<NtmPanel*>());
  REQUIRE(w.findChild<SaganOverlay*>());
}

TEST_CASE("NTM panel loads a model run's controls and reproduces its traced stages", "[ui][ntm]") {
  ensureApp();
  const ModelConfig c = preset_config("ntm-small");
  Model model(c, init_params(c, c.seed));
  const RunResult r = model.run("hello", "", RunOptions{});
  NtmPanel panel;
  panel.loadTrace(r.trace);
  REQUIRE(panel.run().steps.size() == 5);
  REQUIRE(panel.run().memory[0].rows() == 16);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 2; ++h) {
      const std::string name = "ntm.step" + std::to_string(t) + (h == 0 ? ".read0" : ".write0") + ".sharpened";
      const Tensor& want = r.trace.find(name)->tensor;
      const RowVec& got = panel.run().steps[size_t(t)].addressing[size_t(h)].sharpened;
      for (int i = 0; i < 16; ++i) REQUIRE(got[i] == Approx(want.data[size_t(i)]).margin(1e-5));
    }
  // The sliders now edit the loaded run: gamma 2 on step 4's read head sharpens its shifted weights.
  panel.setStep(4);
  panel.setHead(0);
  QSlider* gamma = slider(panel, "ntmGamma");
  gamma->setValue(gamma->value() == 25 ? 30 : 25);  // a real change, so the slider stores it
  const double g = gamma->value() / 10.0;
  REQUIRE(panel.controls(4, 0).gamma == Approx(g));
  const NtmAddressing& a = panel.run().steps[4].addressing[0];
  double z = 0;
  for (int i = 0; i < 16; ++i) z += std::pow(double(a.shifted[i]), g);
  for (int i = 0; i < 16; ++i) REQUIRE(a.sharpened[i] == Approx(std::pow(double(a.shifted[i]), g) / z).margin(1e-6));
  Trace empty;
  REQUIRE_THROWS_WITH(panel.loadTrace(empty), Catch::Matchers::Contains("ntm.memory"));
}
