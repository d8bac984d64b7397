#include "core/formats/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tensor/error.h"

namespace atlas {

namespace {

[[noreturn]] void write_error(const std::string& path, const std::string& message) {
  throw AtlasError(path + ": " + message);
}

std::string errno_message() {
  if (errno == ENOSPC) return "no space left on the device";
  if (errno == EDQUOT) return "disk quota exceeded";
  // The file-size limit (`ulimit -f`); the executables ignore SIGXFSZ so this is reported.
  if (errno == EFBIG) return "the file is too large for the file-size limit (ulimit -f)";
  return std::strerror(errno);
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  static std::atomic<unsigned> counter{0};
  // Only a regular file is replaced: renaming over /dev/full (as root) or a FIFO would swap a
  // device node or a pipe for a file.
  struct stat st {};
  replaces_ = ::lstat(path_.c_str(), &st) == 0;
  if (replaces_ && !S_ISREG(st.st_mode)) {
    if (S_ISLNK(st.st_mode))
      write_error(path_, "is a symbolic link; give the path of a regular file to replace");
    if (S_ISDIR(st.st_mode)) write_error(path_, "is a folder, not a file");
    write_error(path_,
                "exists and is not a regular file (a device, pipe or socket); give a file path");
  }
  // A unique sibling: same directory, so rename() stays atomic on one file system.
  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) write_error(path_, "cannot open for writing (" + errno_message() + ")");
}

std::string AtomicFileWriter::outcome() const {
  return replaces_ ? "the old file is kept" : "nothing was written";
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t size) {
  if (fd_ < 0) write_error(path_, "write after commit");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) write_error(path_, "write failed (" + errno_message() + "); " + outcome());
    p += n;
    size -= size_t(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) write_error(path_, "commit called twice");
  // fsync before rename: otherwise a crash can leave the new name pointing at empty blocks.
  if (::fsync(fd_) != 0) write_error(path_, "fsync failed (" + errno_message() + "); " + outcome());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) write_error(path_, "close failed (" + errno_message() + "); " + outcome());
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    write_error(path_, "cannot replace the file (" + errno_message() + "); " + outcome());
  committed_ = true;
}


void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes.data(), bytes.size());
  writer.commit();
}

}  // namespace atlas
