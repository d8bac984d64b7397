#pragma once
// Qt writers (QSvgGenerator, QPdfWriter, QImage::save, QTextStream) write files through core's
// AtomicFileWriter: bytes go to a temporary sibling that is fsynced and renamed over the target
// only when everything was written, so a failed export leaves the old file as it was.
// Not QSaveFile: Qt 6.4's QSaveFile::commit() reports success after a short write (a full disk,
// a file-size limit) and renames the truncated file over the old one.
#include <QIODevice>
#include <QString>
#include <functional>
#include <memory>
#include <string>

namespace atlas {
class AtomicFileWriter;
}

namespace atlas::ui {

class AtomicFileDevice : public QIODevice {
 public:
  // Opens for writing; throws AtlasError naming `path` when the temporary cannot be created.
  explicit AtomicFileDevice(const QString& path);
  ~AtomicFileDevice() override;  // without commit(): the temporary is removed, the target kept

  // Renames the complete file over the target. Throws AtlasError with the first write error
  // (the target untouched), or when fsync or the rename fails.
  void commit();
  bool failed() const { return !m_error.empty(); }  // a write has failed (commit() will throw)

  bool isSequential() const override { return true; }  // append only: no seeking back

 protected:
  qint64 readData(char*, qint64) override { return -1; }
  qint64 writeData(const char* data, qint64 len) override;

 private:
  std::unique_ptr<AtomicFileWriter> m_writer;
  std::string m_error;  // the first failed write's message
};

// Writes `path` as a whole: `write(device)` fills it, then it is committed. Errors (an
// AtlasError from `write` too) name the file: "cannot write 'PATH': REASON", where REASON says
// that the old file was kept when there was one.
void writeFileAtomically(const QString& path, const std::function<void(AtomicFileDevice&)>& write);

}  // namespace atlas::ui
