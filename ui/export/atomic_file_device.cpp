#include "ui/export/atomic_file_device.h"

#include <QFileInfo>

#include "core/formats/atomic_file.h"
#include "core/tensor/error.h"

namespace atlas::ui {

AtomicFileDevice::AtomicFileDevice(const QString& path)
    : m_writer(std::make_unique<AtomicFileWriter>(path.toStdString())) {
  QIODevice::open(QIODevice::WriteOnly);
}

AtomicFileDevice::~AtomicFileDevice() = default;

qint64 AtomicFileDevice::writeData(const char* data, qint64 len) {
  if (!m_error.empty()) return -1;
  try {
    m_writer->write(data, static_cast<size_t>(len));
  } catch (const AtlasError& e) {
    m_error = e.what();
    setErrorString(QString::fromStdString(m_error));
    return -1;
  }
  return len;
}

void AtomicFileDevice::commit() {
  // A writer that ignored a failed write (QTextStream, QImageWriter report it late or not at
  // all) must not get its truncated file committed.
  if (!m_error.empty()) throw AtlasError(m_error);
  m_writer->commit();
}

void writeFileAtomically(const QString& path, const std::function<void(AtomicFileDevice&)>& write) {
  const std::string p = path.toStdString();
  const bool hadFile = QFileInfo::exists(path);
  try {
    AtomicFileDevice device(path);
    try {
      write(device);
    } catch (const AtlasError&) {
      // A writer that gives up because its writes failed ("could not write ...", "PNG
      // encoding failed") says less than the write error itself, which commit() throws.
      if (!device.failed()) throw;
    }
    device.commit();
  } catch (const AtlasError& e) {
    std::string reason = e.what();
    if (reason.rfind(p + ": ", 0) != 0) throw;  // not about the file (e.g. a missing array)
    reason.erase(0, p.size() + 2);
    if (hadFile && reason.find("the old file is kept") == std::string::npos)
      reason += "; the old file is kept";
    throw AtlasError("cannot write '" + p + "': " + reason);
  }
}

}  // namespace atlas::ui
