// Hostile input to the real `atlas` (and `attention-atlas`) executables: every case must end
// promptly with one line naming the input and exit 1, never a crash, a hang, an "internal
// error", a wrapped integer or a message cut at a NUL byte. Each command runs under
// `timeout -s KILL`, so a hang fails the test (exit 137) instead of hanging the suite.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::run_atlas;
using Catch::Matchers::Contains;

namespace {

// run_atlas with a kill deadline and an optional environment prefix. The deadline is for
// waiting only; nothing asserts how long a command took.
Output run_killable(const std::string& args, const std::string& exe = ATLAS_CLI, const std::string& env = "") {
  static int n = 0;
  const fs::path err = fs::temp_directory_path() / ("atlas-hostile-err-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(n++));
  const std::string cmd = env + " timeout -s KILL 60 " + exe + " " + args + " 2>" + err.string();
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  const int status = pclose(p);
  const std::string e = atlas_test::read_all(err);
  fs::remove(err);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, e};
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A refusal as the issue asks for it: exit 1, one line, naming `what`, no internal error.
void check_refused(const Output& o, const std::string& what) {
  INFO("stderr: " << o.err);
  CHECK(o.code == 1);
  CHECK_THAT(o.err, Contains(what));
  CHECK_THAT(o.err, !Contains("internal error"));
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
}

bool no_export(const Output& o) { return o.err.find("unknown verb \"export\"") != std::string::npos; }

// A float32 .npy written by write_npy: shape and data (little-endian, version 1 or 2 header).
std::pair<std::vector<int64_t>, std::vector<float>> read_npy_f32(const fs::path& p) {
  const std::string b = atlas_test::read_all(p);
  REQUIRE(b.size() > 10);
  REQUIRE(b.compare(0, 6, "\x93NUMPY") == 0);
  const bool v1 = b[6] == 1;
  const size_t hlen = v1 ? size_t(uint8_t(b[8])) | size_t(uint8_t(b[9])) << 8
                         : size_t(uint8_t(b[8])) | size_t(uint8_t(b[9])) << 8 | size_t(uint8_t(b[10])) << 16;
  const size_t start = (v1 ? 10 : 12) + hlen;
  const std::string header = b.substr(v1 ? 10 : 12, hlen);
  REQUIRE_THAT(header, Contains("'<f4'"));
  std::vector<int64_t> shape;
  const size_t open = header.find("'shape': (") + 10;
  for (size_t i = open; header[i] != ')';) {
    size_t used = 0;
    shape.push_back(std::stoll(header.substr(i), &used));
    i += used;
    while (header[i] == ',' || header[i] == ' ') ++i;
  }
  std::vector<float> data((b.size() - start) / 4);
  std::memcpy(data.data(), b.data() + start, data.size() * 4);
  return {shape, data};
}

}  // namespace

TEST_CASE("atlas pattern refuses --tile corners whose product with --zoom overflows, naming both",
          "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-tile");
  fs::create_directories(dir);
  const std::string out = " --out " + (dir / "t.npy").string();
  const std::string base = "pattern --preset tiny-local1d --length 100 ";
  check_refused(run_killable(base + "--tile 9223372036854775807,0,5,5 --zoom 4" + out),
                "--tile row 9223372036854775807 times --zoom 4 is out of range");
  // 2^62 x 4 wrapped to row 0: a tile of the first rows, exit 0. Now a refusal.
  check_refused(run_killable(base + "--tile 4611686018427387904,0,5,5 --zoom 4" + out),
                "--tile row 4611686018427387904 times --zoom 4 is out of range");
  check_refused(run_killable(base + "--tile 0,4611686018427387904,5,5 --zoom 4" + out),
                "--tile column 4611686018427387904 times --zoom 4 is out of range");
  // The corner fits, the far edge does not: (r0 + ROWS) x zoom.
  check_refused(run_killable(base + "--tile 2305843009213693951,0,5,5 --zoom 4" + out),
                "--tile row end 2305843009213693956 times --zoom 4 is out of range");
  check_refused(run_killable(base + "--tile 30,0,5,5 --zoom 4" + out),
                "--tile row 30 at --zoom 4 starts at position 120, past the last of the 100 positions");
  check_refused(run_killable(base + "--tile 0,0,5,99999999999999999999 --zoom 4" + out), "--tile COLS must be an integer");
  check_refused(run_killable(base + "--tile -1,0,5,5" + out), "--tile R0 must be between 0 and");
  CHECK_FALSE(fs::exists(dir / "t.npy"));
  fs::remove_all(dir);
}

TEST_CASE("a zoomed tile at the far end of 16M positions equals a naive count of the local1d pattern",
          "[cli][hostile]") {
  // tiny-local1d (decoder, block 32): query i sees key j when max(0, (i/32 - 1) 32) <= j <= i.
  // L = 2^24 - 1 makes the last pixel row and column partial (15 of 16 positions).
  const int64_t L = (int64_t(1) << 24) - 1, z = 16, r0 = 1048570, c0 = 1048566, rows = 6, cols = 10;
  const fs::path dir = fresh_dir("hostile-far-tile");
  fs::create_directories(dir);
  const fs::path f = dir / "far.npy";
  const Output o = run_killable("pattern --preset tiny-local1d --length " + std::to_string(L) + " --tile " +
                                std::to_string(r0) + "," + std::to_string(c0) + "," + std::to_string(rows) + "," +
                                std::to_string(cols) + " --zoom 16 --out " + f.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const auto [shape, data] = read_npy_f32(f);
  REQUIRE(shape == std::vector<int64_t>{rows, cols});
  int nonzero = 0;
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t x = 0; x < cols; ++x) {
      const int64_t R = (r0 + y) * z, C = (c0 + x) * z;
      const int64_t nr = std::min(R + z, L) - R, nc = std::min(C + z, L) - C;
      int64_t allowed = 0;
      for (int64_t i = R; i < R + nr; ++i)
        for (int64_t j = C; j < C + nc; ++j) allowed += j <= i && j >= std::max<int64_t>(0, (i / 32 - 1) * 32);
      const double want = nr > 0 && nc > 0 ? double(allowed) / double(nr * nc) : 0.0;
      INFO("pixel (" << y << ", " << x << ")");
      CHECK(data[size_t(y * cols + x)] == Approx(want).margin(1e-6));
      nonzero += allowed > 0;
    }
  CHECK(nonzero > 10);  // the tile holds the band, not an empty corner
  fs::remove_all(dir);
}

TEST_CASE("a FIFO given as --image, --text-file, --config or --controls is refused at once by name",
          "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-fifo");
  fs::create_directories(dir);
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string f = fifo.string();
  const char* kFifo = "is a named pipe (FIFO), not a regular file";
  for (const std::string& args :
       {"run preset:tiny-local2d --image " + f, "sagan --image " + f, "run preset:tiny-encoder --text-file " + f,
        "pattern --config " + f + " --length 10 --stats", "ntm --controls " + f, "run " + f + " --text x"}) {
    INFO(args);
    check_refused(run_killable(args), f + ": " + kFifo);
  }
  const Output e = run_killable("export preset:tiny-encoder --text-file " + f + " --out " + (dir / "x.svg").string());
  if (!no_export(e)) check_refused(e, f + ": " + kFifo);
  // An output path that is a FIFO is refused too, and stays a FIFO (a file is written by
  // renaming over its name, which would replace the node).
  check_refused(run_killable("pattern --preset tiny-local1d --length 10 --out " + f),
                "--out " + f + " is a named pipe (FIFO), not a regular file");
  struct stat st {};
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  fs::remove_all(dir);
}

TEST_CASE("an SVG with text given as --image is refused by content as a vector image", "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-svg");
  fs::create_directories(dir);
  const std::string svg =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- a drawing -->\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"32\">"
      "<text x=\"2\" y=\"20\" font-family=\"serif\">Hello</text></svg>\n";
  write_file(dir / "hello.svg", svg);
  write_file(dir / "looks-raster.png", svg);  // the name says PNG, the content says SVG
  write_file(dir / "drawing.svgz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10) + "compressed");
  const char* kRaster = "; the CLI reads raster images: ";
  for (const std::string verb : {"run preset:tiny-local2d", "sagan"}) {
    INFO(verb);
    check_refused(run_killable(verb + " --image " + (dir / "hello.svg").string()),
                  (dir / "hello.svg").string() + " is an SVG (vector) image" + kRaster);
    check_refused(run_killable(verb + " --image " + (dir / "looks-raster.png").string()),
                  (dir / "looks-raster.png").string() + " is an SVG (vector) image" + kRaster);
    check_refused(run_killable(verb + " --image " + (dir / "drawing.svgz").string()),
                  (dir / "drawing.svgz").string() + " is an SVGZ (compressed SVG, vector) image" + kRaster);
  }
  // A raster image still goes through (binary PPM: every build reads it).
  std::string ppm = "P6\n8 8\n255\n";
  for (int i = 0; i < 8 * 8; ++i) ppm += std::string("\x40\x80\xc0", 3);
  write_file(dir / "ok.ppm", ppm);
  const Output ok = run_killable("sagan --image " + (dir / "ok.ppm").string());
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Contains("8 x 8, resampled to 32 x 32"));
  fs::remove_all(dir);
}

TEST_CASE("an option or switch given twice is refused by name", "[cli][hostile]") {
  check_refused(run_killable("run preset:tiny-encoder --text a --text b"), "--text given twice (\"a\" and \"b\")");
  check_refused(run_killable("run preset:tiny-encoder --text=a --text b"), "--text given twice");
  check_refused(run_killable("run preset:tiny-encoder --text a --scores --scores"), "--scores given twice");
  check_refused(run_killable("pattern --preset tiny-local1d --length 10 --zoom 1 --zoom 2 --stats"),
                "--zoom given twice");
  check_refused(run_killable("sagan --query 1,1 --query 2,2"), "--query given twice");
  check_refused(run_killable("run preset:tiny-encoder --text a --scores=no"),
                "--scores is a switch and takes no value");
}

TEST_CASE("out-of-range --query and other indices are refused with the valid range", "[cli][hostile]") {
  // sagan-small works on a 32 x 32 map.
  check_refused(run_killable("sagan --query 32,0"), "--query ROW must be between 0 and 31, got 32");
  check_refused(run_killable("sagan --query 0,-1"), "--query COL must be between 0 and 31, got -1");
  check_refused(run_killable("sagan --query 99999999999999999999,0"), "--query ROW must be an integer");
  check_refused(run_killable("pattern --preset tiny-local1d --length 10 --head 4 --stats"),
                "--head must be between 0 and 3, got 4");
  check_refused(run_killable("pattern --preset tiny-local1d --length 10 --layer 2 --stats"),
                "--layer must be between 0 and 1, got 2");
  check_refused(run_killable("run preset:tiny-encoder --text abc --top-k 0"), "--top-k must be between 1 and 257, got 0");
  check_refused(run_killable("performer-error --std abc"), "--std must be a number in (0, 100), got \"abc\"");
  check_refused(run_killable("performer-error --length 4096 --features 65536"),
                "--features 65536 at --length 4096 needs two [4096, 65536] float32 feature matrices");
  const Output e = run_killable("export preset:tiny-encoder --text abc --view tokens --query 3 --out /tmp/never.svg");
  if (!no_export(e)) {
    check_refused(e, "--query 3 is out of range: the ");
    CHECK_THAT(e.err, Contains(" has 3 queries (0 to 2, or -1 for all)"));
  }
}

TEST_CASE("a config.json given as MODEL is refused saying what a model is", "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-config-as-model");
  fs::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  std::ofstream(path) << R"({"architecture": "decoder"})";
  for (const std::string verb : {"run", "info"}) {
    const Output o = run_killable(verb + " " + path + (verb == "run" ? " --text x" : ""));
    check_refused(o, path);
    CHECK_THAT(o.err, Contains("model.safetensors"));
    CHECK_THAT(o.err, !Contains("header length"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a symlink loop is reported by path with exit 1, never as an internal error", "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-loop");
  fs::create_directories(dir);
  fs::create_symlink(dir / "b", dir / "a");
  fs::create_symlink(dir / "a", dir / "b");
  const std::string a = (dir / "a").string();
  for (const std::string& args :
       {"run " + a + " --text x", "pattern --config " + a + " --length 10 --stats",
        "run preset:tiny-encoder --text-file " + a, "sagan --image " + a, "ntm --controls " + a,
        "run preset:tiny-encoder --text x --dump " + a + "/dump"}) {
    INFO(args);
    const Output o = run_killable(args);
    check_refused(o, a);
    CHECK_THAT(o.err, Contains("symbolic links"));
  }
  fs::remove_all(dir);
}

TEST_CASE("a file used as a folder and a path longer than PATH_MAX are reported by path with exit 1",
          "[cli][hostile]") {
  // Root ignores permissions, so "cannot enter" is shown with a file in the middle of a path.
  const fs::path dir = fresh_dir("hostile-paths");
  fs::create_directories(dir);
  write_file(dir / "file", "x");
  const std::string through = (dir / "file" / "sub").string();
  for (const std::string& args : {"run " + through + " --text x", "run preset:tiny-encoder --text-file " + through,
                                  "run preset:tiny-encoder --text x --dump " + through,
                                  "pattern --config " + through + " --length 10 --stats"}) {
    INFO(args);
    check_refused(run_killable(args), through);
  }
  // Longer than PATH_MAX (4096): ENAMETOOLONG from the first system call that sees it.
  const std::string long_path = (dir / std::string(200, 'd')).string() + "/" + std::string(5000, 'x');
  for (const std::string& args :
       {"run preset:tiny-encoder --text-file " + long_path, "run " + long_path + " --text x",
        "sagan --image " + long_path, "pattern --config " + long_path + " --length 10 --stats",
        "run preset:tiny-encoder --text x --dump " + long_path}) {
    INFO(args.substr(0, 80));
    const Output o = run_killable(args);
    check_refused(o, "too long");
    CHECK_THAT(o.err, Contains(dir.string()));  // the message names the path (shortened)
  }
  fs::remove_all(dir);
}

TEST_CASE("a NUL byte in a user's file is escaped in messages and output, not a cut", "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-nul");
  fs::create_directories(dir);
  // JSON's \u0000 puts a real NUL in the model's name; the refusal quotes the whole name.
  write_file(dir / "config.json",
             "{\"name\": \"bad\\u0000name\", \"architecture\": \"encoder\", \"d_model\": 8, \"n_heads\": 2, "
             "\"d_ff\": 8, \"n_layers\": 1}");
  check_refused(run_killable("pattern --config " + (dir / "config.json").string() + " --length 4 --stats"),
                "config \"bad\\0name\" has no sparse pattern");
  // A NUL in an NTM head's name: the step lines print all of it.
  write_file(dir / "ntm.json",
             "{\"memory\": [[1, 0], [0, 1]], \"heads\": [{\"name\": \"r\\u0000tail\"}],"
             " \"steps\": [{\"r\\u0000tail\": {\"key\": [1, 0], \"beta\": 5, \"gate\": 1, \"shift\": [0, 1, 0],"
             " \"gamma\": 1}}]}");
  const Output ntm = run_killable("ntm --controls " + (dir / "ntm.json").string());
  INFO(ntm.err);
  REQUIRE(ntm.code == 0);
  CHECK_THAT(ntm.out, Contains("r\\0tail"));
  CHECK(ntm.out.find('\0') == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("huge finite weights warn naming tensor and value; NaN logits are reported, not printed",
          "[cli][hostile]") {
  const fs::path dir = fresh_dir("hostile-weights");
  const Output init = run_killable("init --preset tiny-encoder --out " + dir.string());
  INFO(init.err);
  REQUIRE(init.code == 0);
  const Output sane = run_killable("run " + dir.string() + " --text hello");
  REQUIRE(sane.code == 0);
  CHECK_THAT(sane.err, !Contains("warning"));
  CHECK_THAT(sane.out, Contains("prediction at the last position:"));

  // Every entry of embed.tokens set to 1e20 (finite in float32), written in place.
  std::string st = atlas_test::read_all(dir / "model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, st.data(), 8);
  const auto header = nlohmann::json::parse(st.substr(8, n));
  const auto offsets = header.at("embed.tokens").at("data_offsets");
  const float big = 1e20f;
  for (size_t at = 8 + n + offsets[0].get<size_t>(); at < 8 + n + offsets[1].get<size_t>(); at += 4)
    std::memcpy(&st[at], &big, 4);
  write_file(dir / "model.safetensors", st);

  const Output o = run_killable("run " + dir.string() + " --text hello");
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK_THAT(o.err, Contains("warning: weights: tensor embed.tokens holds 1e+20 at [0, 0]"));
  CHECK_THAT(o.err, Contains("warning: the output logits [5, 257] hold") && Contains("NaN"));
  CHECK_THAT(o.out, Contains("predictions: none (the logits hold NaN or Inf"));
  CHECK_THAT(o.out, !Contains("nan") && !Contains("prediction at the last position"));
  fs::remove_all(dir);
}

TEST_CASE("the desktop app in screenshot mode exits 1 with the message when --image cannot be read",
          "[cli][hostile][gui]") {
  const fs::path gui = fs::path(ATLAS_CLI).parent_path() / "attention-atlas";
  if (!fs::exists(gui)) {
    WARN("no attention-atlas in this build (ATLAS_GUI=OFF): skipped");
    return;
  }
  const fs::path dir = fresh_dir("hostile-gui");
  fs::create_directories(dir);
  write_file(dir / "garbage.png", "not an image at all");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const fs::path shot = dir / "shot.png";
  const std::string env = "QT_QPA_PLATFORM=offscreen";
  for (const auto& [image, says] :
       {std::pair{dir / "missing.png", std::string("no such file")},
        std::pair{fifo, std::string("named pipe (FIFO)")},
        std::pair{dir / "garbage.png", std::string("cannot read the image")}}) {
    INFO(image.string());
    const Output o = run_killable("--model preset:tiny-vit --image " + image.string() + " --screenshot " + shot.string(),
                                  gui.string(), env);
    INFO(o.err);
    CHECK(o.code == 1);
    CHECK_THAT(o.err, Contains("attention-atlas: --image " + image.string()) && Contains(says));
    CHECK_FALSE(fs::exists(shot));  // no screenshot of the built-in test card
  }
  fs::remove_all(dir);
}
