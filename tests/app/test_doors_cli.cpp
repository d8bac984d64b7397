// The real executables at the two doors of issue 45: every file read through the input-file
// policy (a workspace that is a FIFO, given to `attention-atlas`, is refused at once), and the
// memory guard counting everything (RLIMIT_AS set by `prlimit --as` named in the refusal;
// `atlas info` describing a model too large to load without loading it). Each command runs
// under `timeout -s KILL`, so a hang fails the test instead of hanging the suite; nothing
// asserts how long a command took.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/address_sanitizer.h"
#include "tests/app/cli_runner.h"
#include "tests/core/gguf_model_writer.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using Catch::Matchers::Contains;

namespace {

// `ENV timeout -s KILL 60 EXE ARGS`; stdout, stderr and the exit code (-1: killed).
Output run_guarded(const std::string& exe, const std::string& args, const std::string& env = "") {
  static int n = 0;
  const fs::path err = fs::temp_directory_path() /
                       ("atlas-doors-err-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  const std::string cmd = env + " timeout -s KILL 60 " + exe + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  for (size_t got; (got = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, got);
  const int status = pclose(p);
  const std::string e = atlas_test::read_all(err);
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, e};
}

// A model of our own format in one .safetensors file: a preset's config in __metadata__ and a
// header listing one float32 tensor of `gib` GiB whose data is a hole (intact header, no disk).
fs::path sparse_single_file_model(const fs::path& dir, int gib) {
  const std::string config = R"({"name": "huge", "architecture": "encoder", "vocab_size": 256,
    "tokenizer": {"type": "bytes"}, "d_model": 8, "n_heads": 2, "d_ff": 16, "n_layers": 1,
    "max_positions": 16, "positional": "learned", "output": "tied"})";
  const uint64_t bytes = uint64_t(gib) << 30;
  nlohmann::json header = {{"big", {{"dtype", "F32"}, {"shape", {int64_t(bytes / 4096), 1024}},
                                    {"data_offsets", {0, bytes}}}},
                           {"__metadata__", {{"config", config}}}};
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  const fs::path path = dir / "huge.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = h.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << h;
  }
  fs::resize_file(path, 8 + h.size() + bytes);
  return path;
}

}  // namespace

TEST_CASE("attention-atlas given a workspace that is a FIFO exits 1 at once with the message",
          "[cli][doors][gui]") {
  const fs::path gui = fs::path(ATLAS_CLI).parent_path() / "attention-atlas";
  if (!fs::exists(gui)) {
    WARN("no attention-atlas in this build (ATLAS_GUI=OFF): skipped");
    return;
  }
  const fs::path dir = fresh_dir("doors-workspace");
  fs::create_directories(dir);
  const fs::path fifo = dir / "study.atlas";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_directories(dir / "folder.atlas");
  for (const auto& [path, says] : {std::pair{fifo, std::string("is a named pipe (FIFO), not a regular file")},
                                   std::pair{dir / "folder.atlas", std::string("is a folder, not a file")}}) {
    INFO(path.string());
    const Output o = run_guarded(gui.string(), path.string() + " --quit-after-run", "QT_QPA_PLATFORM=offscreen");
    INFO(o.err);
    CHECK(o.code == 1);  // a blocked open would be killed by the timeout: -1
    CHECK_THAT(o.err, Contains("attention-atlas: " + path.string() + ": " + says));
  }
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));  // left as it was
  fs::remove_all(dir);
}

TEST_CASE("atlas under prlimit --as refuses weights that exceed the address space, naming the limit",
          "[cli][doors][memory]") {
  if (atlas::test::under_address_sanitizer()) {
    WARN("the sanitizer maps terabytes of shadow memory: an address-space limit cannot run it");
    return;
  }
  const fs::path dir = fresh_dir("doors-prlimit");
  fs::create_directories(dir);
  const fs::path model = sparse_single_file_model(dir, 4);  // 4 GiB of float32 weights
  const std::string limit = std::to_string(uint64_t(3) << 30);  // 3 GiB
  const Output o = run_guarded("prlimit --as=" + limit + " " + ATLAS_CLI, "run " + model.string() + " --text ab");
  INFO(o.err);
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Contains(model.string() + ": the model's weights need about 4.0 GB") &&
                        Contains("the address-space limit RLIMIT_AS (ulimit -v, prlimit --as) of 3.0 GB") &&
                        Contains("nothing was loaded"));
  // The same limit on the same command with a model that fits runs.
  const Output fits = run_guarded("prlimit --as=" + limit + " " + ATLAS_CLI, "run preset:tiny-encoder --text ab");
  INFO(fits.err);
  CHECK(fits.code == 0);
  fs::remove_all(dir);
}

TEST_CASE("atlas info describes a model too large to load, from its headers, without loading it",
          "[cli][doors][memory]") {
  const fs::path dir = fresh_dir("doors-info");
  fs::create_directories(dir);
  const std::string budget = "ATLAS_MEMORY_BUDGET=64M";
  // Our own format: 1 GiB of float32 weights (a hole on disk), a budget of 64 MB.
  const fs::path single = sparse_single_file_model(dir, 1);
  const Output info = run_guarded(ATLAS_CLI, "info " + single.string() + " --tensors", budget);
  INFO(info.err);
  REQUIRE(info.code == 0);
  CHECK_THAT(info.out, Contains("encoder") && Contains("tensor big [262144, 1024] F32 1024.00 MB") &&
                           Contains("weights as held: 1024.0 MB (F32 1024.0 MB in 1 tensors)") &&
                           Contains("memory available: 64.0 MB (ATLAS_MEMORY_BUDGET=64M); the weights do not fit"));
  const Output run = run_guarded(ATLAS_CLI, "run " + single.string() + " --text ab", budget);
  CHECK(run.code == 1);
  CHECK_THAT(run.err, Contains("the model's weights need about 1.0 GB"));

  // GGUF: the metadata and tensor table, not the data (1 GiB more of it, a hole).
  gguf_test::Arch a;
  gguf_test::File file = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(file);
  file.writer.tensor("blk.0.zz_big.weight", {1024, 262144}, gguf_test::T_F32, {});
  const fs::path gguf = gguf_test::write(file, "doors-info");
  fs::resize_file(gguf, fs::file_size(gguf) + (uint64_t(1) << 30));
  const Output g = run_guarded(ATLAS_CLI, "info " + gguf.string(), budget);
  INFO(g.err);
  REQUIRE(g.code == 0);
  CHECK_THAT(g.out, Contains("decoder") && Contains("Q8_0") && Contains("the weights do not fit"));
  const Output grun = run_guarded(ATLAS_CLI, "run " + gguf.string() + " --text 12", budget);
  CHECK(grun.code == 1);
  CHECK_THAT(grun.err, Contains("the model's weights need about 1.0 GB") && Contains("Q8_0 matrices"));
  fs::remove_all(gguf.parent_path());
  fs::remove_all(dir);
}
