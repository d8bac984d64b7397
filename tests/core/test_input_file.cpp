// The input-file policy (core/formats/input_file.h): every reader of user files looks before
// it opens, so a FIFO, a device, a folder or an oversized file is refused by name, promptly.
// The FIFO cases would hang forever without the policy: a test that fails by hanging is
// caught by ctest's timeout.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/formats/dump.h"
#include "core/formats/input_file.h"
#include "core/formats/model_io.h"
#include "core/formats/npy.h"
#include "core/formats/safetensors.h"
#include "core/input/rgb_image.h"
#include "tests/core/hf_test_util.h"

using namespace atlas;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

fs::path make_fifo(const fs::path& path) {
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  return path;
}

// A file of `bytes` whose blocks are never written (sparse): cheap to make at any size.
void make_sparse_file(const fs::path& path, uint64_t bytes) {
  std::ofstream(path).close();
  fs::resize_file(path, bytes);
}

}  // namespace

TEST_CASE("input files: a FIFO is refused by every reader without blocking", "[input-file]") {
  const fs::path dir = hf_test::fresh_dir("input_file_fifo");
  const fs::path fifo = make_fifo(dir / "pipe");
  CHECK_THROWS_WITH(read_input_file(fifo.string(), InputKind::Text),
                    Contains("pipe: is a named pipe (FIFO), not a regular file"));
  CHECK_THROWS_WITH(read_safetensors(fifo.string()), Contains("named pipe"));
  CHECK_THROWS_WITH(read_npy(fifo.string()), Contains("named pipe"));
  CHECK_THROWS_WITH(read_ppm(fifo.string()), Contains("named pipe"));

  // A model folder whose config.json is a FIFO (next to real weights).
  const fs::path model_dir = dir / "model";
  fs::create_directories(model_dir);
  make_fifo(model_dir / "config.json");
  std::ofstream(model_dir / "model.safetensors").close();
  CHECK_THROWS_WITH(load_model(model_dir.string()),
                    Contains("config.json") && Contains("named pipe"));
  // The model given as a FIFO itself.
  CHECK_THROWS_WITH(load_model(fifo.string()), Contains("named pipe"));

  // A dump folder whose manifest is a FIFO.
  const fs::path dump_dir = dir / "dump";
  fs::create_directories(dump_dir);
  make_fifo(dump_dir / "manifest.json");
  CHECK_THROWS_WITH(read_trace_dump(dump_dir.string()),
                    Contains("manifest.json") && Contains("named pipe"));
  fs::remove_all(dir);
}

TEST_CASE("input files: devices, folders, loops and missing files are named", "[input-file]") {
  CHECK_THROWS_WITH(read_input_file("/dev/zero", InputKind::ModelConfig),
                    Contains("/dev/zero: is a character device, not a regular file"));
  CHECK_THROWS_WITH(read_safetensors("/dev/zero"), Contains("character device"));
  const fs::path dir = hf_test::fresh_dir("input_file_kinds");
  CHECK_THROWS_WITH(read_input_file(dir.string(), InputKind::Text),
                    Contains("is a folder, not a file"));
  CHECK_THROWS_WITH(read_input_file((dir / "absent.txt").string(), InputKind::Text),
                    Contains("absent.txt: no such file"));
  fs::create_symlink(dir / "b", dir / "a");
  fs::create_symlink(dir / "a", dir / "b");
  CHECK_THROWS_WITH(read_input_file((dir / "a").string(), InputKind::Text),
                    Contains("symlink loop"));
  // A regular file used as a folder.
  hf_test::write_text(dir / "file", "x");
  CHECK_THROWS_WITH(read_input_file((dir / "file" / "inner").string(), InputKind::Text),
                    Contains("not a folder"));
  CHECK_THROWS_WITH(read_input_file(std::string(5000, 'x'), InputKind::Text),
                    Contains("too long"));
  CHECK_THROWS_WITH(read_input_file(std::string("a\0b", 3), InputKind::Text),
                    Contains("NUL byte"));
  CHECK_THROWS_WITH(read_input_file("", InputKind::Image), Contains("empty path"));
  // /dev/zero as a model's config.json (a symlink to it): refused before reading a byte.
  const fs::path model_dir = dir / "model";
  fs::create_directories(model_dir);
  fs::create_symlink("/dev/zero", model_dir / "config.json");
  std::ofstream(model_dir / "model.safetensors").close();
  CHECK_THROWS_WITH(load_model(model_dir.string()), Contains("character device"));
  fs::remove_all(dir);
}

TEST_CASE("input files: the size cap of each kind is checked before reading", "[input-file]") {
  const fs::path dir = hf_test::fresh_dir("input_file_caps");
  const uint64_t cap = input_limit(InputKind::ModelConfig).max_bytes;
  REQUIRE(cap == 16u << 20);
  make_sparse_file(dir / "config.json", cap + 1);
  CHECK_THROWS_WITH(read_input_file((dir / "config.json").string(), InputKind::ModelConfig),
                    Contains("is 16.0 MB, over the 16.0 MB limit for a model config"));
  // Exactly at the cap is read (and is all zero bytes).
  make_sparse_file(dir / "at_cap.json", cap);
  CHECK(read_input_file((dir / "at_cap.json").string(), InputKind::ModelConfig).size() == cap);
  make_sparse_file(dir / "text.txt", (64u << 20) + 1);
  CHECK_THROWS_WITH(read_input_file((dir / "text.txt").string(), InputKind::Text),
                    Contains("limit for a text file"));
  // Weights are memory-mapped: no cap, only the type check.
  CHECK(input_limit(InputKind::Weights).max_bytes == 0);
  fs::remove_all(dir);
}

TEST_CASE("input files: contents are read exactly", "[input-file]") {
  const fs::path dir = hf_test::fresh_dir("input_file_exact");
  std::string bytes;
  for (int i = 0; i < 200000; ++i) bytes.push_back(char((i * 7919) % 256));  // crosses 64 KB reads
  {
    std::ofstream out(dir / "data.bin", std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }
  CHECK(read_input_file((dir / "data.bin").string(), InputKind::Other) == bytes);
  std::ofstream(dir / "empty").close();
  CHECK(read_input_file((dir / "empty").string(), InputKind::Text).empty());
  CHECK(format_bytes(3) == "3 bytes");
  CHECK(format_bytes(1536) == "1.5 KB");
  CHECK(format_bytes(uint64_t(5) << 30) == "5.0 GB");
  fs::remove_all(dir);
}
