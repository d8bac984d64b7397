// File > Open workspace (MainWindow::openWorkspace, the function the menu and
// `attention-atlas FILE.atlas` call) through the input-file policy: a FIFO, a folder or a device
// is refused with a message and the window keeps its model. The FIFO is watched by a thread
// that opens its write end without blocking, which succeeds only once a reader has it open: a
// reader that bypassed the policy would be found out (and unblocked, so the test fails instead
// of hanging).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QDir>
#include <QTemporaryDir>
#include <atomic>
#include <string>
#include <thread>

#include "core/tensor/error.h"
#include "tests/ui/run_window.h"
#include "tests/ui/ui_test_support.h"
#include "ui/main_window/main_window.h"
#include "ui/workspace.h"

using namespace atlas;
using namespace atlas::ui;

namespace {

class FifoReaderWatch {
 public:
  // `unblock`: written to a reader found, so that a blocked open() and read() return.
  FifoReaderWatch(std::string path, std::string unblock)
      : path_(std::move(path)), unblock_(std::move(unblock)), thread_([this] { watch(); }) {}
  ~FifoReaderWatch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool readerSeen() const { return seen_; }

 private:
  void watch() {
    while (!stop_) {
      const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {  // ENXIO until a reader has the FIFO open
        seen_ = true;
        if (::write(fd, unblock_.data(), unblock_.size()) < 0) {
        }
        ::close(fd);
        return;
      }
      ::usleep(1000);
    }
  }
  std::string path_, unblock_;
  std::atomic<bool> stop_{false}, seen_{false};
  std::thread thread_;
};

const char* kValidWorkspace = R"({"format": "attention-atlas-workspace", "version": 1, "model": "preset:tiny-encoder"})";

}  // namespace

TEST_CASE("Open workspace refuses a FIFO, a folder and a device without blocking", "[ui][workspace][doors]") {
  QTemporaryDir dir;
  const QString fifo = dir.filePath("study.atlas");
  REQUIRE(::mkfifo(fifo.toLocal8Bit().constData(), 0600) == 0);
  uitest::RunWindow rw("demo:induction", "abab");
  rw.w.setHeadless(true);
  {
    FifoReaderWatch watch(fifo.toStdString(), kValidWorkspace);
    const bool opened = rw.w.openWorkspace(fifo);
    watch.stop();
    CHECK_FALSE(watch.readerSeen());  // the FIFO was never opened for reading
    CHECK_FALSE(opened);
    CHECK(rw.w.lastError() == fifo + ": is a named pipe (FIFO), not a regular file");
  }
  {
    FifoReaderWatch watch(fifo.toStdString(), kValidWorkspace);
    CHECK_THROWS_WITH(loadWorkspaceFile(fifo), Catch::Contains("is a named pipe (FIFO)"));
    watch.stop();
    CHECK_FALSE(watch.readerSeen());
  }
  CHECK(rw.w.modelSpec() == "demo:induction");  // the window keeps what it had

  REQUIRE(QDir(dir.path()).mkdir("folder.atlas"));
  CHECK_FALSE(rw.w.openWorkspace(dir.filePath("folder.atlas")));
  CHECK(rw.w.lastError().endsWith("folder.atlas: is a folder, not a file"));
  CHECK_FALSE(rw.w.openWorkspace("/dev/zero"));
  CHECK(rw.w.lastError() == "/dev/zero: is a character device, not a regular file");
  CHECK(rw.w.modelSpec() == "demo:induction");
}
