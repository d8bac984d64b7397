#pragma once
// Where file dialogs open: the folder last chosen for the same purpose, else the home folder,
// never the process's working directory (/ for an app started from a desktop menu, where a
// dialog given only "ntm.svg" opens). Remembered in QSettings; a remembered folder that is gone
// falls back to home.
#include <QString>

namespace atlas::ui {

enum class DialogPurpose { Model, Workspace, Export, Image, Corpus, Checkpoint };

// An existing folder to open a dialog of `purpose` in.
QString dialogFolder(DialogPurpose purpose);
// dialogFolder(purpose) + "/" + fileName: a save dialog's suggested path.
QString dialogStart(DialogPurpose purpose, const QString& fileName);
// After the user chose `path` (a file: its folder is kept; a folder: itself). Empty: nothing.
void rememberDialogChoice(DialogPurpose purpose, const QString& path);

}  // namespace atlas::ui
