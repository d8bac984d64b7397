// `atlas pattern` driven as a user would: statistics, tiles written as .npy (header parsed
// here by hand), and errors naming the bad option or config key.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/analysis/performer_study.h"
#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::Output;

namespace {

using atlas_test::run_atlas;

// Minimal .npy v1 reader for '<f4': returns the shape string and the data.
std::pair<std::string, std::vector<float>> read_f4(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 10);
  REQUIRE(bytes.compare(0, 6, "\x93NUMPY") == 0);
  const size_t hlen = size_t(uint8_t(bytes[8])) | (size_t(uint8_t(bytes[9])) << 8);
  const std::string header = bytes.substr(10, hlen);
  REQUIRE(header.find("'descr': '<f4'") != std::string::npos);
  const size_t a = header.find("'shape': ("), b = header.find(')', a);
  std::vector<float> data((bytes.size() - 10 - hlen) / 4);
  std::memcpy(data.data(), bytes.data() + 10 + hlen, data.size() * 4);
  return {header.substr(a + 10, b - a - 10), data};
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("atlas-pattern-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST_CASE("atlas pattern --stats counts a strided pattern at 1M positions", "[cli][sparse]") {
  // tiny-sparse-strided: stride 16, per-head factors; head 0 = A1 = {max(0, i-16), ..., i}.
  Output o = run_atlas("pattern --preset tiny-sparse-strided --length 1000000 --stats");
  REQUIRE(o.code == 0);
  // Row i has min(i, 16) + 1 keys: sum over i = 17 * 1000000 - (16 * 17) / 2.
  CHECK(o.out.find("nonzeros: " + std::to_string(17LL * 1000000 - 136)) != std::string::npos);
  CHECK(o.out.find("keys per query: min 1, max 17") != std::string::npos);
  // Head 1 = A2: row i sees floor(i / 16) + 1 keys.
  Output h1 = run_atlas("pattern --preset tiny-sparse-strided --length 64 --head 1 --stats");
  REQUIRE(h1.code == 0);
  CHECK(h1.out.find("nonzeros: " + std::to_string(16 * (1 + 2 + 3 + 4))) != std::string::npos);
}

TEST_CASE("atlas pattern writes an exact tile at zoom 1 and a density tile zoomed out", "[cli][sparse]") {
  const fs::path f = temp_file("local1d.npy");
  // tiny-local1d: block 32, query i sees (floor(i/32) - 1) * 32 <= j <= i.
  Output o = run_atlas("pattern --preset tiny-local1d --length 100 --tile 30,0,5,100 --zoom 1 --out " + f.string());
  REQUIRE(o.code == 0);
  auto [shape, data] = read_f4(f);
  CHECK(shape == "5, 100");
  REQUIRE(data.size() == 500);
  for (int y = 0; y < 5; ++y)
    for (int j = 0; j < 100; ++j) {
      const int i = 30 + y;
      const bool want = j <= i && j >= (i / 32 - 1) * 32;
      REQUIRE(data[size_t(y * 100 + j)] == (want ? 1.0f : 0.0f));
    }
  // Whole matrix at zoom 16 (exact: every row counted) for 128 positions: 8 x 8 pixels.
  // Pixel (1, 1) is lower-triangular with its diagonal (136 of 256 cells); pixel (2, 0) lies in
  // the previous block (full); pixel (0, 1) is the future.
  Output z = run_atlas("pattern --preset tiny-local1d --length 128 --zoom 16 --out " + f.string());
  REQUIRE(z.code == 0);
  auto [zshape, zdata] = read_f4(f);
  CHECK(zshape == "8, 8");
  CHECK(zdata[1 * 8 + 1] == Approx(136.0 / 256.0));
  CHECK(zdata[2 * 8 + 2] == Approx(136.0 / 256.0));
  CHECK(zdata[2 * 8 + 0] == 1.0f);
  CHECK(zdata[2 * 8 + 3] == 0.0f);
  CHECK(zdata[1] == 0.0f);
  CHECK(zdata[4 * 8 + 1] == 0.0f);  // rows 64..79 see blocks 1 and 2 only (32..79)
  fs::remove(f);
  // 1M positions: the default zoom keeps the tile at most 1024 x 1024.
  Output big = run_atlas("pattern --preset tiny-sparse-fixed --length 1048576 --out " + f.string());
  REQUIRE(big.code == 0);
  CHECK(read_f4(f).first == "1024, 1024");
  fs::remove(f);
}

TEST_CASE("atlas pattern errors name the option or the config key", "[cli][sparse]") {
  Output none = run_atlas("pattern --preset tiny-decoder --length 10 --stats");
  CHECK(none.code == 1);
  CHECK(none.err.find("sparse.pattern") != std::string::npos);
  Output tile = run_atlas("pattern --preset tiny-local1d --length 10 --tile 1,2,3 --out x.npy");
  CHECK(tile.code == 1);
  CHECK(tile.err.find("--tile") != std::string::npos);
  const fs::path cfg = temp_file("bad.json");
  std::ofstream(cfg) << R"({"sparse": {"pattern": "strided", "stride": 0}})";
  Output bad = run_atlas("pattern --config " + cfg.string() + " --length 10 --stats");
  CHECK(bad.code == 1);
  CHECK(bad.err.find("sparse.stride") != std::string::npos);
  fs::remove(cfg);
  Output both = run_atlas("pattern --preset tiny-local1d --length 10");
  CHECK(both.code == 1);
  CHECK(both.err.find("--stats") != std::string::npos);
}

TEST_CASE("atlas performer-error prints the error table against m", "[cli][performer]") {
  Output o = run_atlas("performer-error --length 64 --d 16 --features 8,4096 --std 0.4");
  REQUIRE(o.code == 0);
  std::istringstream in(o.out);
  std::string line;
  std::vector<std::array<double, 3>> rows;
  while (std::getline(in, line)) {
    std::array<double, 3> r{};
    if (line.empty() || line[0] == '#' || line.find("m ") != std::string::npos) continue;
    if (std::sscanf(line.c_str(), "%lf %lf %lf", &r[0], &r[1], &r[2]) == 3) rows.push_back(r);
  }
  REQUIRE(rows.size() == 2);
  CHECK(rows[0][0] == 8);
  CHECK(rows[1][0] == 4096);
  CHECK(rows[1][1] < rows[0][1]);  // more features, smaller error
  CHECK(rows[1][2] < 0.1);
  Output bad = run_atlas("performer-error --features 0");
  CHECK(bad.code == 1);
  CHECK(bad.err.find("--features") != std::string::npos);
}

TEST_CASE("atlas performer-error prints the FAVOR+ study's numbers, line for line", "[cli][performer]") {
  // The same study the app's Performer panel draws (core/analysis/performer_study.h): the
  // table's lines are its errors in the CLI's format, in the order m was given.
  const Output o = run_atlas("performer-error --length 40 --d 8 --features 16,4,16 --std 0.3 --seed 5 --causal");
  REQUIRE(o.code == 0);
  atlas::FavorStudySpec spec;
  spec.length = 40;
  spec.d = 8;
  spec.features = {16, 4, 16};
  spec.sd = 0.3;
  spec.seed = 5;
  spec.causal = true;
  const atlas::FavorStudy study = atlas::favor_error_study(spec);
  std::string want = "# Performer FAVOR+ vs exact softmax: L 40, d 8, causal, Q/K entries N(0, 0.3^2)\n";
  char line[128];
  std::snprintf(line, sizeof line, "%8s  %14s  %12s\n", "m", "mean_abs_err", "max_row_tv");
  want += line;
  for (size_t i = 0; i < spec.features.size(); ++i) {
    std::snprintf(line, sizeof line, "%8lld  %14.3e  %12.4f\n", (long long)spec.features[i],
                  study.errors[i].mean_abs, study.errors[i].max_tv);
    want += line;
  }
  CHECK(o.out == want);
  CHECK(study.errors[1].mean_abs > study.errors[0].mean_abs);  // m 4 against m 16: a real table
}
