// attention-atlas: the desktop explorer. Opens on the default preset with the sample text
// already run, so the first thing on screen is a live attention map.
//   attention-atlas [--model SPEC] [--text S] [--target S] [--image FILE] [--screenshot FILE]
//                   [--quit-after-run]
#include <QApplication>
#include <QBuffer>
#include <QByteArray>
#include <QCommandLineParser>
#include <QEventLoop>
#include <QMessageBox>
#include <QPixmap>
#include <QTimer>
#include <cstdio>

#include "app/checked_writes.h"
#include "app/openmp_waits.h"
#include "core/formats/input_file.h"
#include "core/tensor/allocation_policy.h"
#include "core/tensor/error.h"
#include "ui/export/atomic_file_device.h"
#include "ui/main_window/default_input.h"
#include "ui/main_window/main_window.h"
#include "ui/views/model_view.h"
#include "ui/views/overview_cache.h"

int main(int argc, char** argv) {
  atlas::app::wait_passively_in_openmp(argv);
  // SIGXFSZ ignored (a screenshot past `ulimit -f` is an error, not a kill leaving its
  // temporary); --help and --version output checked at exit.
  atlas::app::check_every_write("attention-atlas");
  atlas::keep_freed_memory_for_reuse();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("AttentionAtlas");
  QApplication::setApplicationName("attention-atlas");
  QApplication::setApplicationVersion("0.1.0");

  QCommandLineParser cli;
  cli.setApplicationDescription("Attention Atlas: inspect transformer attention.");
  cli.addHelpOption();
  cli.addVersionOption();
  const QCommandLineOption model("model", "Model: demo:NAME, preset:NAME, a model folder, a .safetensors or a .gguf file.", "SPEC",
                                 atlas::ui::defaultModelSpec());
  const QCommandLineOption text("text", "Input text (default: the sample text).", "S");
  const QCommandLineOption target("target", "Decoder input of an encoder-decoder model.", "S");
  const QCommandLineOption image("image", "Input image of a pixel model (e.g. --model preset:tiny-local2d).", "FILE");
  const QCommandLineOption shot("screenshot", "Save the window as PNG after the first run, then exit.", "FILE");
  const QCommandLineOption quit("quit-after-run", "Exit after the first run (exit code 1 if it failed).");
  const QCommandLineOption dark("dark", "Use the dark theme for this session.");
  cli.addOptions({model, text, target, image, shot, quit, dark});
  cli.addPositionalArgument("workspace", "A workspace file (.atlas) to open: model, input, selection, layout.",
                            "[FILE.atlas]");
  cli.process(app);

  atlas::ui::MainWindow window;
  const bool headless = cli.isSet(shot) || cli.isSet(quit);
  window.setHeadless(headless);
  if (cli.isSet(dark)) window.setDarkTheme(true);
  if (headless) window.resize(1280, 800);  // screenshots do not depend on a saved layout
  window.setSourceText(cli.isSet(text) ? cli.value(text)
                                        : atlas::ui::defaultTextFor(cli.value(model)));
  if (cli.isSet(target)) window.setTargetText(cli.value(target));

  if (headless) {
    const QString shotPath = cli.value(shot);
    QObject::connect(&window, &atlas::ui::MainWindow::firstRunShown, &window, [&window, shotPath] {
      // A workspace whose selection the run does not have (layer 99 of a 2-layer model) ends a
      // scripted session with its message, as the dialog tells a user.
      if (!window.workspaceError().isEmpty()) {
        std::fprintf(stderr, "attention-atlas: %s\n", qPrintable(window.workspaceError()));
        QCoreApplication::exit(1);
        return;
      }
      // The layers x heads grid builds on a worker thread: on a long input it can still be
      // building when the run is shown. Wait for it (at most 60 s) so the picture shows it.
      // Likewise the heatmap's overview of a map computed on request (long inputs).
      const auto waitFor = [](auto* sender, auto signal) {
        QEventLoop wait;
        QObject::connect(sender, signal, &wait, &QEventLoop::quit);
        QTimer::singleShot(60000, &wait, &QEventLoop::quit);
        wait.exec();
      };
      auto* grid = window.findChild<atlas::ui::ModelView*>("modelGrid");
      if (grid && grid->isVisible() && grid->building()) waitFor(grid, &atlas::ui::ModelView::built);
      if (window.findChild<atlas::ui::OverviewCache*>()->pending())
        waitFor(&window, &atlas::ui::MainWindow::overviewShown);
      // Let the layout settle and every view paint once before grabbing.
      QTimer::singleShot(200, &window, [&window, shotPath] {
        if (!shotPath.isEmpty()) {
          const QPixmap pm = window.grab();
          try {  // written whole or not at all: a failed save keeps an earlier screenshot
            if (pm.isNull()) throw atlas::AtlasError("the window could not be grabbed");
            // Encoded in memory first: libpng prints its own line on a failed write, and the
            // write error (full disk, `ulimit -f`) is to be the only one.
            QByteArray png;
            QBuffer buffer(&png);
            buffer.open(QIODevice::WriteOnly);
            if (!pm.save(&buffer, "PNG")) throw atlas::AtlasError("PNG encoding failed");
            atlas::ui::writeFileAtomically(shotPath, [&](atlas::ui::AtomicFileDevice& out) {
              out.write(png);  // a failed write is thrown by the commit, naming the file
            });
          } catch (const atlas::AtlasError& e) {
            std::fprintf(stderr, "attention-atlas: screenshot: %s\n", e.what());
            QCoreApplication::exit(1);
            return;
          }
        }
        QCoreApplication::exit(0);
      });
    });
    // A run that never finishes must not hang a script.
    QTimer::singleShot(180000, &app, [] {
      std::fprintf(stderr, "attention-atlas: no result within 180 s\n");
      QCoreApplication::exit(2);
    });
  }
  if (cli.isSet(image)) {
    const QString path = cli.value(image);
    // Looked at before anything runs: a FIFO or device would block the image reader, and a
    // missing file must not leave a ViT on its built-in test card as if all were well.
    QString refused;
    try {
      atlas::check_input_file(path.toStdString(), atlas::InputKind::Image);
    } catch (const atlas::AtlasError& e) {
      refused = QString::fromStdString(e.what());
    }
    if (!refused.isEmpty() && headless) {
      std::fprintf(stderr, "attention-atlas: --image %s\n", qPrintable(refused));
      return 1;
    }
    if (!refused.isEmpty()) {
      QTimer::singleShot(0, &window, [&window, refused] {
        QMessageBox::critical(&window, "Cannot open image", refused);
      });
    } else {
      // Once the model is in. Headless, an image the window refuses (not decodable, a text
      // model) ends the session with its message and exit code 1 instead of a screenshot.
      QObject::connect(&window, &atlas::ui::MainWindow::modelReady, &window,
                       [&window, path, headless] {
                         if (window.openImage(path) || !headless) return;
                         std::fprintf(stderr, "attention-atlas: --image %s\n", qPrintable(window.lastError()));
                         QCoreApplication::exit(1);
                       },
                       Qt::SingleShotConnection);
    }
  }
  window.show();
  if (!cli.positionalArguments().isEmpty()) {
    if (cli.positionalArguments().size() > 1 || cli.isSet(model) || cli.isSet(text) || cli.isSet(target)) {
      std::fprintf(stderr, "attention-atlas: a workspace brings its own model and input; give the file alone\n");
      return 1;
    }
    if (!window.openWorkspace(cli.positionalArguments().first()) && headless) {
      std::fprintf(stderr, "attention-atlas: %s\n", qPrintable(window.lastError()));
      return 1;
    }
    return app.exec();
  }
  window.loadModel(cli.value(model));
  return app.exec();
}
