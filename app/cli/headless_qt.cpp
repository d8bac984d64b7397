// A QGuiApplication for drawing figures without a display (headless_qt.h).
#include "app/cli/headless_qt.h"

#if defined(ATLAS_HAVE_UI)
#include <QApplication>
#include <cstdlib>
#include <iostream>

namespace atlas::cli {

// Qt needs an application object for fonts and painting; without a display use the
// offscreen platform so this works over ssh and in CI.
// Qt's start-up chatter (e.g. "XDG_RUNTIME_DIR not set") is not the user's business on a
// headless export; real warnings still reach stderr.
namespace {

void quietMessages(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtDebugMsg || type == QtInfoMsg) return;
  if (msg.startsWith("QStandardPaths:")) return;
  std::cerr << msg.toLocal8Bit().constData() << "\n";
}

}  // namespace

std::unique_ptr<QGuiApplication> make_headless_app() {
  if (QGuiApplication::instance()) return nullptr;
  qInstallMessageHandler(quietMessages);
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((!display || !*display) && (!wayland || !*wayland)) setenv("QT_QPA_PLATFORM", "offscreen", 0);
  static int argc = 1;
  static char name[] = "atlas";
  static char* argv[] = {name, nullptr};
  // A QApplication (widgets), not only a QGuiApplication: the panels' charts are graphics widgets.
  return std::make_unique<QApplication>(argc, argv);
}


}  // namespace atlas::cli
#endif
