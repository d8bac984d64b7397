#include "core/formats/input_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tensor/error.h"

namespace atlas {

namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

[[noreturn]] void refuse(const std::string& path, const std::string& problem) {
  throw AtlasError(path + ": " + problem);
}

std::string errno_problem(int err) {
  switch (err) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "a part of the path is not a folder";
    case EACCES: return "permission denied";
    case ELOOP: return "too many levels of symbolic links (a symlink loop?)";
    case ENAMETOOLONG: return "the path is too long";
    case EISDIR: return "is a folder, not a file";
    default: return std::strerror(err);
  }
}

std::string type_problem(mode_t mode) {
  if (S_ISDIR(mode)) return "is a folder, not a file";
  if (S_ISFIFO(mode)) return "is a named pipe (FIFO), not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

void check_size(const std::string& path, const InputLimit& limit, uint64_t size) {
  if (limit.max_bytes != 0 && size > limit.max_bytes)
    refuse(path, "is " + format_bytes(size) + ", over the " + format_bytes(limit.max_bytes) +
                     " limit for a " + limit.what);
}

}  // namespace

const InputLimit& input_limit(InputKind kind) {
  // Real files are far below these: a Hugging Face config.json is a few KB, Llama 3's
  // tokenizer.json 9 MB, Gemma's 34 MB, a GPT-2 dump manifest of 1024 tokens ~2 MB.
  static const InputLimit limits[] = {
      {"model config", 16 * kMiB},   {"tokenizer file", 512 * kMiB},
      {"weights index", 64 * kMiB},  {"weights file", 0},
      {"text file", 64 * kMiB},      {"image file", 256 * kMiB},
      {"npy file", 8192 * kMiB},     {"dump manifest", 256 * kMiB},
      {"training state", 16 * kMiB}, {"file", 256 * kMiB},
      {"workspace", 4 * kMiB},       {"system file", kMiB},
      {"cache file", 256 * kMiB},
  };
  return limits[static_cast<int>(kind)];
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes < kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f KB", double(bytes) / 1024.0);
  } else if (bytes < 1024 * kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f MB", double(bytes) / double(kMiB));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / double(1024 * kMiB));
  }
  return buf;
}

uint64_t check_input_file(const std::string& path, InputKind kind) {
  if (path.empty()) throw AtlasError("an empty path was given for a " +
                                     std::string(input_limit(kind).what));
  if (path.find('\0') != std::string::npos)
    throw AtlasError("a path with a NUL byte was given for a " +
                     std::string(input_limit(kind).what));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) refuse(path, errno_problem(errno));
  if (!S_ISREG(st.st_mode)) refuse(path, type_problem(st.st_mode));
  check_size(path, input_limit(kind), static_cast<uint64_t>(st.st_size));
  return static_cast<uint64_t>(st.st_size);
}

InputFile::InputFile(const std::string& path, InputKind kind) : path_(path) {
  check_input_file(path, kind);
  // O_NONBLOCK: if the path was swapped for a FIFO since the stat, opening must not wait for a
  // writer; the fstat below then refuses it.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) refuse(path, "cannot open for reading: " + errno_problem(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    refuse(path, errno_problem(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    refuse(path, type_problem(st.st_mode));
  }
  size_ = static_cast<uint64_t>(st.st_size);
  try {
    check_size(path, input_limit(kind), size_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string InputFile::read_at(uint64_t offset, uint64_t length) const {
  std::string out;
  if (offset >= size_) return out;
  length = std::min(length, size_ - offset);
  out.resize(static_cast<size_t>(length));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + got, out.size() - got, off_t(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(path_, "read failed: " + errno_problem(errno));
    }
    if (n == 0) break;  // the file shrank since it was opened
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

std::string read_input_file(const std::string& path, InputKind kind) {
  const InputLimit& limit = input_limit(kind);
  const InputFile f(path, kind);
  std::string out;
  out.reserve(static_cast<size_t>(f.size()));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(path, "read failed: " + errno_problem(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    check_size(path, limit, out.size());  // grew while being read
  }
  return out;
}

}  // namespace atlas
