// `atlas run MODEL --image FILE` as a user runs it: a binary PPM written here (every build of
// the CLI reads PPM; PNG/JPEG need the GUI libraries) becomes one token per grey value, and
// the run traces one attention row per pixel; a text model or two inputs are refused.
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/app/cli_runner.h"

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
