// File dialogs open in the folder last chosen for the same purpose, else in the home folder
// (ui/dialog_folders.h); every file dialog of ui/ is given that folder, never a bare file name
// that Qt would resolve against the working directory (/ for an app started from a menu).
#include <catch2/catch.hpp>

#include <QDir>
#include <QSettings>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/ui/ui_test_support.h"
#include "ui/dialog_folders.h"

using namespace atlas;
using namespace atlas::ui;
namespace fs = std::filesystem;

TEST_CASE("file dialogs open where the user last was for the same purpose, else at home", "[ui][dialogs]") {
  uitest::ensureApp();
  QSettings().clear();
  const QString home = QDir::homePath();
  CHECK(dialogFolder(DialogPurpose::Export) == home);
  CHECK(dialogStart(DialogPurpose::Export, "ntm.svg") == home + "/ntm.svg");

  QTemporaryDir figures, models;
  REQUIRE(figures.isValid());
  REQUIRE(models.isValid());
  rememberDialogChoice(DialogPurpose::Export, figures.filePath("head 3.svg"));  // a file: its folder
  rememberDialogChoice(DialogPurpose::Model, models.path());                   // a folder: itself
  rememberDialogChoice(DialogPurpose::Image, "");                              // cancelled: nothing
  CHECK(dialogFolder(DialogPurpose::Export) == figures.path());
  CHECK(dialogStart(DialogPurpose::Export, "sagan.svg") == figures.filePath("sagan.svg"));
  CHECK(dialogFolder(DialogPurpose::Model) == models.path());
  for (DialogPurpose other : {DialogPurpose::Workspace, DialogPurpose::Image, DialogPurpose::Corpus,
                              DialogPurpose::Checkpoint})
    CHECK(dialogFolder(other) == home);

  // A remembered folder that is gone, or a relative one, falls back to home.
  figures.remove();
  CHECK(dialogFolder(DialogPurpose::Export) == home);
  QSettings().setValue("workspaceDir", "relative/folder");
  CHECK(dialogFolder(DialogPurpose::Workspace) == home);
  // The folders earlier versions remembered are kept across the upgrade.
  QSettings().setValue("exportDir", models.path());
  CHECK(dialogFolder(DialogPurpose::Export) == models.path());
  QSettings().clear();
}

TEST_CASE("every file dialog in ui/ is given its purpose's folder", "[ui][dialogs]") {
  // The arguments of each QFileDialog::get... call, up to the end of its statement.
  const std::regex call(R"(QFileDialog::get(OpenFileName|SaveFileName|ExistingDirectory)\(([^;]*);)");
  int calls = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(ATLAS_SOURCE_DIR) / "ui")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (auto m = std::sregex_iterator(source.begin(), source.end(), call); m != std::sregex_iterator(); ++m) {
      ++calls;
      const std::string args = (*m)[2];
      INFO(entry.path().string() << ": QFileDialog::get" << (*m)[1] << "(" << args);
      CHECK((args.find("dialogFolder(") != std::string::npos || args.find("dialogStart(") != std::string::npos));
    }
  }
  CHECK(calls >= 13);  // the dialogs counted when the rule was made; fewer means the scan broke
}
