#pragma once
// The compute backend of the app's runs: CPU, Vulkan or auto (Vulkan when a non-CPU device
// exists, else CPU), and the Vulkan device, as the CLI's --backend / --device
// (app/cli/backend_choice.cpp). Stored in QSettings ("backend/kind", "backend/device").
#include <QDialog>
#include <QString>
#include <QStringList>
#include <memory>

#include "core/backend/backend.h"

class QComboBox;
class QLabel;

namespace atlas::ui {

struct BackendChoice {
  QString kind = "cpu";  // "cpu" | "vulkan" | "auto"
  QString device;        // "" = best; a device index or a name substring
  bool operator==(const BackendChoice& o) const { return kind == o.kind && device == o.device; }
};

BackendChoice loadBackendChoice();
void saveBackendChoice(const BackendChoice& choice);
bool vulkanBuilt();  // this build has the Vulkan backend
// "index: name (type)" per Vulkan device; empty with `error` set when there is none.
QStringList vulkanDevices(QString* error);

// The backend for `choice`: null = the CPU reference backend. "vulkan" throws AtlasError when
// Vulkan cannot start (no loader, no device, a build without Vulkan); "auto" falls back to the
// CPU and says why in `note`.
std::shared_ptr<Backend> makeBackend(const BackendChoice& choice, QString* note);
// "CPU" or "Vulkan: <device>", for the status bar.
QString backendLabel(const Backend* backend);

class BackendDialog : public QDialog {
  Q_OBJECT
 public:
  explicit BackendDialog(const BackendChoice& current, QWidget* parent = nullptr);
  BackendChoice choice() const;

 private:
  QComboBox* m_kind;
  QComboBox* m_device;
  QLabel* m_note;
};

}  // namespace atlas::ui
