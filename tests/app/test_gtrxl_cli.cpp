// GTrXL through the real `atlas` executable: the presets are listed and a run dumps every gate
// activation under its documented name (docs/dump-format.md) with the documented shape. The
// .npy header and data are read by hand here, independently of core/npy.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;

namespace {

struct Npy {
  std::string shape;         // "4, 64"
  std::vector<float> values;  // little-endian float32 data
};

Npy read_npy(const fs::path& p) {
  const std::string bytes = read_all(p);
  REQUIRE(bytes.size() > 10);
  REQUIRE(bytes.compare(0, 6, "\x93NUMPY") == 0);
  const size_t header_len = size_t(uint8_t(bytes[8])) | (size_t(uint8_t(bytes[9])) << 8);
  const std::string header = bytes.substr(10, header_len);
  REQUIRE(header.find("'descr': '<f4'") != std::string::npos);
  const size_t a = header.find("'shape': (");
  REQUIRE(a != std::string::npos);
  Npy n;
  n.shape = header.substr(a + 10, header.find(')', a) - a - 10);
  const size_t data = 10 + header_len;
  n.values.resize((bytes.size() - data) / 4);
  std::memcpy(n.values.data(), bytes.data() + data, n.values.size() * 4);
  return n;
}

}  // namespace

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
          REQUIRE(n.values.size() == size_t(seg == 0 ? 16 * 64 : 4 * 64));
          for (float v : n.values) {
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
