#pragma once
// Every file the app writes goes through here, so that a failed write (full disk, no permission,
// a crash) leaves the old file as it was: bytes go to a temporary sibling in the target folder
// (same file system, so the rename is atomic), which commit() fsyncs and renames over the
// target. Destroying the writer without commit() removes the temporary.
#include <cstddef>
#include <string>
#include <string_view>

namespace atlas {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void commit();

 private:
  std::string outcome() const;  // what a failure leaves: "the old file is kept" or "nothing ..."

  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  bool committed_ = false;
  bool replaces_ = false;  // a file was at `path` when writing began (messages say it is kept)
};

// The whole file at once, through an AtomicFileWriter. AtlasError naming `path` on failure.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace atlas
