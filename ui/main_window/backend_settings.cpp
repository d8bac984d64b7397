#include "ui/main_window/backend_settings.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QSettings>
#include <QVBoxLayout>

#include "core/tensor/error.h"
#ifdef ATLAS_HAVE_VULKAN
#include "gpu/vulkan_backend.h"
#endif

namespace atlas::ui {

BackendChoice loadBackendChoice() {
  QSettings s;
  BackendChoice c;
  c.kind = s.value("backend/kind", "cpu").toString();
  if (c.kind != "cpu" && c.kind != "vulkan" && c.kind != "auto") c.kind = "cpu";  // a hand-edited file
  c.device = s.value("backend/device").toString();
  return c;
}

void saveBackendChoice(const BackendChoice& choice) {
  QSettings s;
  s.setValue("backend/kind", choice.kind);
  s.setValue("backend/device", choice.device);
}

bool vulkanBuilt() {
#ifdef ATLAS_HAVE_VULKAN
  return true;
#else
  return false;
#endif
}

QStringList vulkanDevices(QString* error) {
  QStringList out;
#ifdef ATLAS_HAVE_VULKAN
  try {
    for (const auto& d : list_vulkan_devices())
      out << QString("%1: %2 (%3)").arg(d.index).arg(QString::fromStdString(d.name), QString::fromStdString(d.type));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
  }
#else
  if (error) *error = "this build has no Vulkan backend (configured with ATLAS_VULKAN=OFF)";
#endif
  return out;
}

std::shared_ptr<Backend> makeBackend(const BackendChoice& choice, QString* note) {
  if (choice.kind == "cpu") return nullptr;
  if (choice.kind != "vulkan" && choice.kind != "auto")
    throw AtlasError("the backend must be cpu, vulkan or auto, not \"" + choice.kind.toStdString() + "\"");
#ifdef ATLAS_HAVE_VULKAN
  if (choice.kind == "auto" && choice.device.isEmpty() && !vulkan_has_non_cpu_device()) {
    if (note) *note = "auto: no GPU found, using the CPU";
    return nullptr;
  }
  VulkanOptions options;
  options.device = choice.device.toStdString();
  if (choice.kind == "vulkan") return std::shared_ptr<Backend>(make_vulkan_backend(options));
  try {
    return std::shared_ptr<Backend>(make_vulkan_backend(options));
  } catch (const AtlasError& e) {
    if (note) *note = "auto: Vulkan unavailable (" + QString::fromStdString(e.what()) + "), using the CPU";
    return nullptr;
  }
#else
  if (choice.kind == "vulkan") throw AtlasError("this build has no Vulkan backend (configured with ATLAS_VULKAN=OFF)");
  if (note) *note = "auto: this build has no Vulkan backend, using the CPU";
  return nullptr;
#endif
}

QString backendLabel(const Backend* backend) {
  if (!backend) return "CPU";
  return "Vulkan: " + QString::fromStdString(backend->name());
}

BackendDialog::BackendDialog(const BackendChoice& current, QWidget* parent) : QDialog(parent) {
  setWindowTitle("Compute backend");
  m_kind = new QComboBox;
  m_kind->addItem("CPU (reference)", "cpu");
  m_kind->addItem("Vulkan", "vulkan");
  m_kind->addItem("Auto (Vulkan on a GPU, else CPU)", "auto");
  m_kind->setCurrentIndex(std::max(0, m_kind->findData(current.kind)));
  m_device = new QComboBox;
  m_device->addItem("best device", QString());
  QString error;
  for (const QString& d : vulkanDevices(&error)) m_device->addItem(d, d.section(':', 0, 0));
  if (!current.device.isEmpty() && m_device->findData(current.device) < 0) m_device->addItem(current.device, current.device);
  m_device->setCurrentIndex(std::max(0, m_device->findData(current.device)));
  m_note = new QLabel(error);
  m_note->setWordWrap(true);
  auto* form = new QFormLayout;
  form->addRow("Backend:", m_kind);
  form->addRow("Vulkan device:", m_device);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* v = new QVBoxLayout(this);
  v->addLayout(form);
  v->addWidget(m_note);
  v->addWidget(buttons);
  const auto sync = [this] { m_device->setEnabled(m_kind->currentData().toString() != "cpu"); };
  connect(m_kind, &QComboBox::currentIndexChanged, this, sync);
  sync();
}

BackendChoice BackendDialog::choice() const {
  return {m_kind->currentData().toString(), m_device->currentData().toString()};
}

}  // namespace atlas::ui
