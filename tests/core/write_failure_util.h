#pragma once
// Test helpers for "a failed write keeps the old file" (tests/core/test_atomic_writes.cpp,
// tests/ui/test_export_writes.cpp, tests/app/test_cli_writes.cpp): a deterministic write
// failure without root tricks (RLIMIT_FSIZE: a write past the limit fails with EFBIG, root or
// not), a really full file system where one can be mounted (a tiny tmpfs, root only), and a
// byte-for-byte snapshot of a folder to compare before and after.
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace write_failure {

namespace fs = std::filesystem;

// While alive, no file of this process may grow past `bytes`: write() fails with EFBIG
// (SIGXFSZ is ignored, so it does not kill the process). Only the soft limit is lowered, so it
// can be restored without privileges. Nothing else in the test may write files meanwhile.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit lowered = old_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_handler_{};
};

// The message of what `write` throws under a file-size limit of `bytes` ("" when it did not
// throw). Assertions belong after the limit is lifted, so the check only runs the write.
template <class F>
std::string failure_under_limit(rlim_t bytes, F&& write) {
  FileSizeLimit limit(bytes);
  try {
    write();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// Every regular file under `dir` (relative name -> bytes): equal snapshots are byte-identical.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_bytes(e.path());
  return files;
}

// Names in `folder` that a writer left behind: AtomicFileWriter's "NAME.tmp.PID.N" and
// replace_folder's hidden ".NAME.PID.N.tmp" / ".old" siblings.
inline std::vector<std::string> leftovers(const fs::path& folder) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(folder)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.find(".old") != std::string::npos)
      found.push_back(name);
  }
  return found;
}

// A fresh folder per test and process (test runs may share /tmp).
inline fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("atlas-writes-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A tiny tmpfs mounted on a fresh folder, unmounted on destruction; mounted() is false where
// mounting is not allowed (not root, in a container without CAP_SYS_ADMIN).
class TinyTmpfs {
 public:
  TinyTmpfs(const std::string& name, const std::string& size) : dir_(fresh_dir(name)) {
    mounted_ = ::geteuid() == 0 &&
               ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~TinyTmpfs() {
    if (mounted_) ::umount(dir_.c_str());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool mounted() const { return mounted_; }
  const fs::path& dir() const { return dir_; }
  // Fills the file system up to `free_bytes` of free space, with a file named "filler".
  void fill_leaving(size_t free_bytes) const {
    const fs::path filler = dir_ / "filler";
    {
      std::ofstream out(filler, std::ios::binary);
      const std::string block(4096, 'x');
      while (out.write(block.data(), block.size())) {
      }
    }
    // The stream's last write failed part-way; cut the filler so `free_bytes` become free.
    const auto size = fs::file_size(filler);
    fs::resize_file(filler, size > free_bytes ? size - free_bytes : 0);
  }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

}  // namespace write_failure
