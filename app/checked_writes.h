#pragma once
// Every write of the two executables is checked, standard output included (docs/bad-input.md,
// "Writing files"). Shared by app/cli/main.cpp and app/gui_main.cpp.
//  - SIGXFSZ is ignored: a write past the file-size limit (`ulimit -f`, RLIMIT_FSIZE) then
//    fails with EFBIG like a write to a full disk, and the writer reports it and removes its
//    temporary file, instead of the process being killed with the temporary left behind.
//  - Standard output is flushed and checked before the process exits: output lost to a full
//    disk, /dev/full or a file-size limit is exit 1 with one line on stderr, never exit 0 with
//    truncated JSON behind.
//  - A standard stream closed at start (`atlas run ... >&-`) is reopened on a device, so the
//    first file the process opens cannot become fd 1 and receive its printed output; a closed
//    stdout then reports as such.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace atlas::app {

namespace checked_writes_detail {
inline bool stdout_closed_at_start = false;
inline bool stdout_reported = false;  // the failure has been said on stderr (or need not be)
inline const char* program = "atlas";
inline int first_flush_errno = 0;  // of the first failed flush_standard_output()

// Keeps `fd` (0, 1 or 2) open: if it was closed, `device` takes its number. True if it was.
inline bool reopen_if_closed(int fd, const char* device, int flags) {
  if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) return false;
  const int opened = ::open(device, flags);  // inherited like the stream it stands for
  if (opened >= 0 && opened != fd) {  // the lowest free number is `fd` unless a lower one is free
    ::dup2(opened, fd);
    ::close(opened);
  }
  return true;
}
}  // namespace checked_writes_detail

// fflush(stdout) for progress lines, remembering why it failed: the exit-time check can then
// name the reason even when the last flush had nothing left to write.
inline void flush_standard_output() {
  errno = 0;
  if (std::fflush(stdout) != 0 && checked_writes_detail::first_flush_errno == 0)
    checked_writes_detail::first_flush_errno = errno;
}

// Why standard output could not be written ("" when everything written so far reached it).
// Flushes it first.
inline std::string standard_output_failure() {
  namespace d = checked_writes_detail;
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  int err = errno;
  if (!flush_failed && !std::ferror(stdout)) return {};
  if (d::stdout_closed_at_start) return "standard output is closed";
  if (!flush_failed) err = d::first_flush_errno;
  // A write stdio made on its own (a full buffer) failed; its errno is gone.
  if (err == 0) return "a write failed, so the output is incomplete";
  switch (err) {
    case ENOSPC: return "no space left on the device";
    case EFBIG: return "the file is too large for the file-size limit (ulimit -f)";
    case EDQUOT: return "disk quota exceeded";
    case EPIPE: return "the reading end of the pipe is closed";
    case EBADF: return "standard output is closed";
    default: return std::strerror(err);
  }
}

// The exit code once standard output is checked: `code` when all was written; otherwise the
// message on stderr (unless `error_said`: the run already failed with its own one line) and
// `code`, or 1 when `code` was 0.
inline int finish_standard_output(int code, bool error_said, const std::string& prefix) {
  namespace d = checked_writes_detail;
  const std::string failure = standard_output_failure();
  d::stdout_reported = true;
  if (failure.empty()) return code;
  if (!error_said) {
    const std::string line = prefix + ": cannot write to standard output: " + failure + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  return code != 0 ? code : 1;
}

// Call first in main (after a re-exec, which would forget a closed stdout). `program` names the
// process in the message of the exit-time check, which covers exits that do not return through
// finish_standard_output (Qt's --help and --version end the process with exit(0)).
inline void check_every_write(const char* program) {
  namespace d = checked_writes_detail;
  d::program = program;
  std::signal(SIGXFSZ, SIG_IGN);
  d::reopen_if_closed(STDIN_FILENO, "/dev/null", O_RDONLY);
  // /dev/full fails every write with ENOSPC, so output to a closed stdout is still an error.
  d::stdout_closed_at_start = d::reopen_if_closed(STDOUT_FILENO, "/dev/full", O_WRONLY);
  d::reopen_if_closed(STDOUT_FILENO, "/dev/null", O_WRONLY);  // no /dev/full: still hold fd 1
  d::reopen_if_closed(STDERR_FILENO, "/dev/null", O_WRONLY);
  std::atexit([] {
    if (d::stdout_reported) return;
    const int code = finish_standard_output(0, false, d::program);
    if (code != 0) std::_Exit(code);  // exit(0) must not report success for lost output
  });
}

}  // namespace atlas::app
