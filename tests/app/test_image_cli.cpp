// `atlas run MODEL --image FILE` as a user runs it: a binary PPM written here (every build of
// the CLI reads PPM; PNG/JPEG need the GUI libraries) becomes one token per grey value, and
// the run traces one attention row per pixel; a text model or two inputs are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include "tests/app/cli_runner.h"
#include "tests/core/image_test_util.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::run_atlas;

TEST_CASE("atlas run --image runs a pixel model on an image file", "[cli][image]") {
  const fs::path dir = fresh_dir("image-cli");
  fs::create_directories(dir);
  const fs::path ppm = dir / "grey.ppm";
  {
    // 8 x 16 pixels of grey 40 + x: the model (32 pixels wide) resamples it to 16 x 32.
    std::ofstream out(ppm, std::ios::binary);
    out << "P6\n16 8\n255\n";
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 16; ++x)
        for (int ch = 0; ch < 3; ++ch) out.put(char(40 + x));
  }
  Output o = run_atlas("run preset:tiny-local2d --image " + ppm.string() + " --dump " + (dir / "dump").string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("resampled to 16 x 32 (grey, 512 tokens)"));
  CHECK_THAT(o.out, Catch::Contains("decoder.layer0.self_attn             [4, 512, 512]"));
  CHECK(fs::exists(dir / "dump" / "decoder.layer0.self_attn.npy"));

  Output text_model = run_atlas("run preset:tiny-encoder --image " + ppm.string());
  CHECK(text_model.code != 0);
  CHECK_THAT(text_model.err, Catch::Contains("does not take images"));
  Output both = run_atlas("run preset:tiny-local2d --text abc --image " + ppm.string());
  CHECK(both.code != 0);
  CHECK_THAT(both.err, Catch::Contains("exactly one of --text, --text-file or --image"));
  Output missing = run_atlas("run preset:tiny-local2d --image " + (dir / "nope.png").string());
  CHECK(missing.code != 0);
  CHECK_THAT(missing.err, Catch::Contains("nope.png"));
  fs::remove_all(dir);
}

TEST_CASE("a truncated JPEG or a header claiming 100000 x 100000 pixels is refused in one line",
          "[cli][image]") {
  // libjpeg decoded a JPEG cut short with a warning and grey for the rest, and Qt's or libpng's
  // own lines printed before the error: the header checks (core/input/image_header.h) now refuse
  // both before any decoder runs, with one line on stderr, with or without Qt.
  const fs::path dir = fresh_dir("image-bad");
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  auto one_line = [](const Output& o, const std::string& message) {
    INFO(o.err);
    CHECK(o.code == 1);
    CHECK_THAT(o.err, Catch::StartsWith("atlas ") && Catch::Contains(message));  // "atlas VERB: "
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  };
  const std::string jpeg = image_test::grey_jpeg(32, 16);
  const std::string whole = write("whole.jpg", jpeg);
  const std::string cut = write("cut.jpg", jpeg.substr(0, jpeg.size() - 6));
  one_line(run_atlas("run preset:tiny-local2d --image " + cut),
           cut + ": the JPEG image is truncated: it ends before its end-of-image marker (FF D9)");
  const Output ok = run_atlas("run preset:tiny-local2d --image " + whole);
  if (ok.err.find("without the GUI libraries") == std::string::npos) {  // a CLI with Qt decodes it
    INFO(ok.err);
    CHECK(ok.code == 0);
    CHECK_THAT(ok.out, Catch::Contains("(grey, 512 tokens)"));
  }
  // Whole, within the cap, but its pixel data is empty: libpng's own "libpng error: ..." line,
  // which it writes to stderr itself, is folded into the one line.
  const std::string empty = write("empty.png", image_test::png_claiming(3, 2));
  const Output e = run_atlas("run preset:tiny-local2d --image " + empty);
  one_line(e, empty + ": ");
  if (e.err.find("without the GUI libraries") == std::string::npos)
    CHECK_THAT(e.err, Catch::Contains("cannot decode the PNG image") && Catch::Contains("(libpng error: "));
  const std::string huge_png = write("huge.png", image_test::png_claiming(100000, 100000));
  one_line(run_atlas("run preset:tiny-local2d --image " + huge_png),
           huge_png + ": the PNG header claims 100000 x 100000 pixels, over the limit");
  const std::string huge_ppm = write("huge.ppm", "P6\n100000 100000\n255\n" + std::string(64, 'x'));
  one_line(run_atlas("sagan --image " + huge_ppm),
           huge_ppm + ": the PPM header claims 100000 x 100000 pixels, over the limit");
  fs::remove_all(dir);
}
