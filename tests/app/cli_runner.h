#pragma once
// Runs the real `atlas` executable (ATLAS_CLI, set by tests/CMakeLists.txt) as a user would and
// returns its exit code, stdout and stderr. Shared by the CLI tests.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace atlas_test {

namespace fs = std::filesystem;

struct Output {
  int code;
  std::string out, err;
};

// A build without the Qt UI (the sanitizer build) has no export verb.
inline bool no_ui(const Output& o) {
  return o.code != 0 && o.err.find("unknown verb \"export\"") != std::string::npos;
}

inline Output run_atlas(const std::string& args) {
  static int n = 0;
  fs::path err = fs::temp_directory_path() /
                 ("atlas-cli-err-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  std::string cmd = std::string(ATLAS_CLI) + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
  int status = pclose(p);
  std::ifstream e(err);
  std::stringstream es;
  es << e.rdbuf();
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, es.str()};
}

// An empty scratch directory named after the test and this process.
inline fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("atlas-cli-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace atlas_test
