#pragma once
// Runs the real `atlas` executable (ATLAS_CLI, set by tests/CMakeLists.txt) as a user would and
// returns its exit code, stdout and stderr. Shared by the CLI tests.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// An .npy file read by hand, independently of core/formats/npy: the shape as written ("4, 64")
// and the float32 or int32 values as floats.
struct Npy {
  std::string shape;
  std::vector<float> data;
};

inline Npy read_npy(const fs::path& p) {
  const std::string bytes = read_all(p);
  REQUIRE(bytes.size() > 10);
  REQUIRE(bytes.compare(0, 6, "\x93NUMPY") == 0);
  const size_t header_len = size_t(uint8_t(bytes[8])) | (size_t(uint8_t(bytes[9])) << 8);
  const std::string header = bytes.substr(10, header_len);
  const bool ints = header.find("'descr': '<i4'") != std::string::npos;
  REQUIRE((ints || header.find("'descr': '<f4'") != std::string::npos));
  const size_t a = header.find("'shape': (");
  REQUIRE(a != std::string::npos);
  Npy n;
  n.shape = header.substr(a + 10, header.find(')', a) - a - 10);
  const size_t start = 10 + header_len, count = (bytes.size() - start) / 4;
  n.data.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (ints) {
      int32_t v;
      std::memcpy(&v, bytes.data() + start + 4 * i, 4);
      n.data[i] = float(v);
    } else {
      std::memcpy(&n.data[i], bytes.data() + start + 4 * i, 4);
    }
  }
  return n;
}

}  // namespace atlas_test
