// A failed figure export never destroys or truncates the file it replaces: every Qt writer
// (QSvgGenerator, QPdfWriter, QImage::save, the CSV stream) and the .npy writer go through a
// temporary renamed over the target when complete (ui/export/atomic_file_device.h). The failure is a
// file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): writes past it fail with EFBIG part-way, as
// on a full disk.
#include <catch2/catch.hpp>

#include <QFile>
#include <QTemporaryDir>

#include "tests/core/write_failure_util.h"
#include "tests/ui/ui_test_support.h"
#include "ui/export/figure_export.h"
#include "ui/panels/ntm/ntm_panel.h"
#include "ui/panels/sagan/sagan_overlay.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;
using atlas::uitest::ensureApp;
using Catch::Contains;
using write_failure::failure_under_limit;
using write_failure::leftovers;
using write_failure::read_bytes;

namespace {

FigureSpec layer0HeadSpec(int head) {
  FigureSpec s;
  s.view = "heatmap";
  s.selection = {"encoder", "attn", 0, head};
  return s;
}

// Every export format is larger than this, so each fails part-way.
constexpr rlim_t kLimit = 32;

// `write(path)` once to make the old file, then `rewrite(path)` under the limit: the error
// names the file and keeps the old bytes, and no temporary is left in the folder.
template <class Write, class Rewrite>
void old_file_survives(const QString& path, Write write, Rewrite rewrite) {
  write(path);
  const std::string before = read_bytes(path.toStdString());
  REQUIRE(before.size() > kLimit);
  const std::string error = failure_under_limit(kLimit, [&] { rewrite(path); });
  CHECK_THAT(error, Contains("cannot write '" + path.toStdString() + "'") &&
                        Contains("write failed") && Contains("the old file is kept"));
  CHECK(read_bytes(path.toStdString()) == before);
  CHECK(leftovers(std::filesystem::path(path.toStdString()).parent_path()).empty());
}

}  // namespace

TEST_CASE("The old file survives every failed figure export (SVG, PDF, PNG, CSV, npy)", "[ui][export][atomic]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = atlas::uitest::handTrace();
  for (const QString format : {"svg", "pdf", "png", "csv", "npy"}) {
    INFO(format.toStdString());
    old_file_survives(
        dir.filePath("figure." + format),
        [&](const QString& p) { exportFigure(layer0HeadSpec(0), t, p); },
        [&](const QString& p) { exportFigure(layer0HeadSpec(1), t, p); });
    // Without the limit the export replaces it.
    const QString path = dir.filePath("figure." + format);
    const std::string before = read_bytes(path.toStdString());
    exportFigure(layer0HeadSpec(1), t, path);
    CHECK(read_bytes(path.toStdString()) != before);
  }
}

TEST_CASE("A failed export to a new name leaves no file at all", "[ui][export][atomic]") {
  ensureApp();
  QTemporaryDir dir;
  const Trace t = atlas::uitest::handTrace();
  for (const QString format : {"svg", "pdf", "png", "csv", "npy"}) {
    INFO(format.toStdString());
    const QString path = dir.filePath("new." + format);
    const std::string error =
        failure_under_limit(kLimit, [&] { exportFigure(layer0HeadSpec(0), t, path); });
    CHECK_THAT(error, Contains("cannot write '" + path.toStdString() + "'") &&
                          Contains("write failed") && !Contains("old file"));
    CHECK_FALSE(QFile::exists(path));
  }
  CHECK(leftovers(dir.path().toStdString()).empty());
}

TEST_CASE("The old file survives a failed NTM figure export", "[ui][ntm][export][atomic]") {
  ensureApp();
  NtmPanel panel;
  QTemporaryDir dir;
  for (const QString format : {"png", "svg", "pdf"}) {
    INFO(format.toStdString());
    const auto exportTo = [&](const QString& p) { panel.exportTo(p); };
    old_file_survives(dir.filePath("ntm." + format), exportTo, exportTo);
  }
}

TEST_CASE("The old file survives a failed SAGAN overlay export", "[ui][sagan][export][atomic]") {
  ensureApp();
  SaganOverlay overlay;
  QTemporaryDir dir;
  for (const QString format : {"png", "svg", "pdf"}) {
    INFO(format.toStdString());
    old_file_survives(
        dir.filePath("sagan." + format), [&](const QString& p) { overlay.exportTo(p); },
        [&](const QString& p) {
          overlay.setQuery(3, 4);
          overlay.exportTo(p);
        });
  }
}

TEST_CASE("A workspace save that fails part-way says the write error and keeps the old file",
          "[ui][workspace][atomic]") {
  // saveWorkspaceFile gives up with its own "could not write PATH" when a write comes up short;
  // the reason (the file-size limit here, a full disk elsewhere) is the write error's.
  QTemporaryDir dir;
  Workspace w;
  w.model = "preset:tiny-encoder";
  w.source = QString(200, 'a');
  const auto save = [&](const QString& p) { saveWorkspaceFile(w, p); };
  old_file_survives(dir.filePath("session.atlas"), save, save);
  const std::string error =
      failure_under_limit(kLimit, [&] { saveWorkspaceFile(w, dir.filePath("new.atlas")); });
  CHECK_THAT(error, Contains("write failed") && !Contains("could not write"));
}
