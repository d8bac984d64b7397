#pragma once
// Runs `atlas` or `attention-atlas` as a child process set up the way a hostile shell would:
// standard output sent to a file or device (/dev/full), or closed; a file-size limit
// (`ulimit -f`, RLIMIT_FSIZE). Unlike `bash -c 'trap "" XFSZ; ...'`, SIGXFSZ is reset to its
// default in the child before exec, so a binary that does not ignore it itself dies by the
// signal (exit 153, as a shell reports it) and the test sees it. No shell: arguments are passed
// as they are.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/app/cli_runner.h"

namespace atlas_test {

struct Child {
  std::string program = ATLAS_CLI;
  std::vector<std::string> args;
  enum class Stdout { Captured, ToFile, Closed } stdout_mode = Stdout::Captured;
  std::string stdout_file;         // ToFile: opened for writing (truncated), e.g. "/dev/full"
  long long file_size_limit = -1;  // bytes (RLIMIT_FSIZE soft limit); -1: unchanged
  std::vector<std::pair<std::string, std::string>> env;  // set in the child only
};

// LLVM's libomp (the sanitizer build's OpenMP) registers itself in a 1 KB shared-memory file
// named after the process id and removes it at a normal exit. Under a file-size limit below 1 KB
// it cannot size that file and aborts, leaving it empty; a later process that gets the same id
// (ids wrap at pid_max) maps the empty file and dies by SIGBUS before main. A child killed by a
// signal leaves the file too. The child has been reaped: the test removes what it left.
inline void remove_stale_libomp_registration(pid_t pid) {
  const std::string name = "/dev/shm/__KMP_REGISTERED_LIB_" + std::to_string(pid) + "_" +
                           std::to_string(::getuid());
  struct stat st {};
  if (::stat(name.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(name.c_str());
}

// Exit code as a shell reports it: the status, or 128 + the signal that ended the child.
inline Output run_child(const Child& c) {
  int out_pipe[2] = {-1, -1}, err_pipe[2];
  REQUIRE(::pipe(err_pipe) == 0);
  if (c.stdout_mode == Child::Stdout::Captured) REQUIRE(::pipe(out_pipe) == 0);
  std::vector<std::string> argv_text{c.program};
  argv_text.insert(argv_text.end(), c.args.begin(), c.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment built before fork (setenv in the child is not async-signal-safe).
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& [k, v] : c.env) replaced = replaced || entry.rfind(k + "=", 0) == 0;
    if (!replaced) env_text.push_back(entry);
  }
  for (const auto& [k, v] : c.env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::signal(SIGXFSZ, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (c.stdout_mode == Child::Stdout::Captured) {
      ::dup2(out_pipe[1], STDOUT_FILENO);
    } else if (c.stdout_mode == Child::Stdout::ToFile) {
      const int fd = ::open(c.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) ::_exit(126);
      ::dup2(fd, STDOUT_FILENO);
      ::close(fd);
    } else {
      ::close(STDOUT_FILENO);
    }
    for (int fd : {err_pipe[0], err_pipe[1], out_pipe[0], out_pipe[1]})
      if (fd > STDERR_FILENO) ::close(fd);
    if (c.file_size_limit >= 0) {
      rlimit lim{};
      ::getrlimit(RLIMIT_FSIZE, &lim);
      lim.rlim_cur = rlim_t(c.file_size_limit);
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  if (out_pipe[1] >= 0) ::close(out_pipe[1]);

  Output o{-1, {}, {}};
  std::vector<pollfd> fds{{err_pipe[0], POLLIN, 0}};
  if (out_pipe[0] >= 0) fds.push_back({out_pipe[0], POLLIN, 0});
  // A hung child is killed after 240 polls without news (one second each): a deadline for
  // waiting only, never asserted on.
  int quiet = 0;
  for (size_t open = fds.size(); open > 0;) {
    const int ready = ::poll(fds.data(), fds.size(), 1000);
    if (ready == 0 && ++quiet == 240) ::kill(pid, SIGKILL);
    if (ready <= 0) continue;
    quiet = 0;
    for (pollfd& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got > 0) {
        (p.fd == err_pipe[0] ? o.err : o.out).append(buf, size_t(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(p.fd);
        p.fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  remove_stale_libomp_registration(pid);
  return o;
}

// `atlas ARGS` with stdout to `file` (e.g. "/dev/full") and optionally a file-size limit.
inline Output run_atlas_to(const std::string& file, std::vector<std::string> args,
                           long long file_size_limit = -1) {
  Child c;
  c.args = std::move(args);
  c.stdout_mode = Child::Stdout::ToFile;
  c.stdout_file = file;
  c.file_size_limit = file_size_limit;
  return run_child(c);
}

}  // namespace atlas_test
