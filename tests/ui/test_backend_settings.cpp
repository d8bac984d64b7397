// The compute backend choice: stored in QSettings and restored by a new window, shown in the
// status bar, a device that does not exist refused with a message naming it, and a run on
// the Vulkan backend (lavapipe) giving the CPU's attention. The window's BackendStatus part is
// driven as Settings > Compute backend drives it.
#include <catch2/catch.hpp>

#include <QSettings>
#include <QSignalSpy>

#include "ui/main_window/backend_settings.h"
#include "ui/main_window/main_window.h"
#include "ui/main_window/run_controller.h"
#include "tests/ui/ui_test_support.h"
#include "tests/ui/window_parts.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;

TEST_CASE("the backend choice persists in the settings and shows in the status bar", "[ui][backend]") {
  ensureApp();
  saveBackendChoice({"cpu", ""});
  {
    MainWindow w;
    CHECK(uitest::backendStatus(w)->text() == "CPU");
    REQUIRE(uitest::backendStatus(w)->apply({"auto", ""}, false));
    CHECK(QSettings().value("backend/kind").toString() == "auto");
  }
  CHECK(loadBackendChoice() == BackendChoice{"auto", ""});
  {
    MainWindow w;  // a new window starts on the stored choice
    CHECK(loadBackendChoice().kind == "auto");
    CHECK_FALSE(uitest::backendStatus(w)->text().isEmpty());
    // A device that does not exist is refused and the stored choice stays.
    CHECK_FALSE(uitest::backendStatus(w)->apply({"vulkan", "no-such-device-xyz"}, false));
    CHECK_FALSE(uitest::backendStatus(w)->error().isEmpty());
    if (vulkanBuilt()) CHECK(uitest::backendStatus(w)->error().contains("no-such-device-xyz"));
    CHECK(loadBackendChoice().kind == "auto");
  }
  QSettings().setValue("backend/kind", "warp-drive");  // a hand-edited file falls back to the CPU
  CHECK(loadBackendChoice().kind == "cpu");
  saveBackendChoice({"cpu", ""});
}

TEST_CASE("a run on the Vulkan backend matches the CPU run", "[ui][backend]") {
  ensureApp();
  QString error;
  if (!vulkanBuilt() || vulkanDevices(&error).isEmpty()) {
    WARN("no Vulkan device: " << error.toStdString());
    return;
  }
  MainWindow w;
  w.resize(900, 600);
  w.show();
  QSignalSpy shown(&w, &MainWindow::traceShown);
  w.setSourceText("the cat sat");
  w.loadModel("preset:tiny-encoder");
  REQUIRE(shown.wait(30000));
  const auto cpu = w.trace();
  shown.clear();
  REQUIRE(uitest::backendStatus(w)->apply({"vulkan", ""}));
  CHECK(uitest::backendStatus(w)->text().startsWith("Vulkan"));
  REQUIRE(shown.wait(60000));
  INFO(w.lastError().toStdString());
  REQUIRE(w.lastError().isEmpty());
  const auto gpu = w.trace();
  REQUIRE(gpu != cpu);
  const Tensor& a = cpu->find("encoder.layer1.attn")->tensor;
  const Tensor& b = gpu->find("encoder.layer1.attn")->tensor;
  REQUIRE(a.data.size() == b.data.size());
  double worst = 0;
  for (size_t k = 0; k < a.data.size(); ++k) worst = std::max(worst, double(std::abs(a.data[k] - b.data[k])));
  CHECK(worst < 1e-4);
  REQUIRE(uitest::backendStatus(w)->apply({"cpu", ""}, false));
  CHECK(uitest::backendStatus(w)->text() == "CPU");
}
