#pragma once
// Scratch folders for tests: TempDir is removed with its contents when it goes out of scope;
// fresh_dir(name) is emptied when made and left behind for inspection after a failure.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>

namespace atlas::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("atlas-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("atlas-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace atlas::test
