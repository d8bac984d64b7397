// GTrXL through the real `atlas` executable: the presets are listed and a run dumps every gate
// activation under its documented name (docs/dump-format.md) with the documented shape. The
// .npy files are read by hand (tests/app/cli_runner.h), independently of core/formats/npy.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Npy;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::read_npy;
using atlas_test::run_atlas;

TEST_CASE("atlas presets lists the GTrXL presets", "[cli][gtrxl]") {
  Output o = run_atlas("presets");
  REQUIRE(o.code == 0);
  CHECK(o.out.find("gtrxl-base\t") != std::string::npos);
  CHECK(o.out.find("tiny-gtrxl\t") != std::string::npos);
}

TEST_CASE("atlas run preset:tiny-gtrxl --dump writes the gate activations per segment", "[cli][gtrxl]") {
  fs::path dir = fresh_dir("gtrxl");
  // 20 bytes: segments of 16 and 4 tokens.
  Output o = run_atlas("run preset:tiny-gtrxl --text abcdefghijklmnopqrst --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  for (int seg = 0; seg < 2; ++seg)
    for (const char* layer : {"layer0", "layer1"})
      for (const char* sub : {"attn", "ffn"})
        for (const char* g : {"r", "z"}) {
          const std::string name =
              "decoder.seg" + std::to_string(seg) + "." + layer + "." + sub + ".gate." + g;
          INFO(name);
          const Npy n = read_npy(dir / (name + ".npy"));
          CHECK(n.shape == (seg == 0 ? "16, 64" : "4, 64"));
          REQUIRE(n.data.size() == size_t(seg == 0 ? 16 * 64 : 4 * 64));
          for (float v : n.data) {
            REQUIRE(v > 0.0f);
            REQUIRE(v < 1.0f);
          }
        }
  auto manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  bool found = false;
  for (const auto& a : manifest["arrays"])
    if (a["name"] == "decoder.seg1.layer1.ffn.gate.z")
      found = a["meaning"].get<std::string>().find("update gate z") != std::string::npos;
  CHECK(found);
  fs::remove_all(dir);
}
