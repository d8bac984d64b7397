// The attention variants through the real `atlas` executable: presets listed, arrays dumped
// under the documented names (docs/dump-format.md) with the documented shapes. The .npy header
// is parsed here by hand, independently of core/npy.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;

namespace {

Output run_cli(const std::string& args) { return atlas_test::run_atlas(args); }

// The "'shape': (a, b), " part of a .npy v1.0 header, read by hand.
std::string npy_shape(const fs::path& p) {
  std::string bytes = read_all(p);
  REQUIRE(bytes.size() > 10);
  REQUIRE(bytes.compare(0, 6, "\x93NUMPY") == 0);
  const size_t header_len = size_t(uint8_t(bytes[8])) | (size_t(uint8_t(bytes[9])) << 8);
  std::string header = bytes.substr(10, header_len);
  size_t a = header.find("'shape': (");
  REQUIRE(a != std::string::npos);
  size_t b = header.find(')', a);
  return header.substr(a + 10, b - a - 10);
}

}  // namespace

TEST_CASE("atlas presets lists the presets", "[cli][variants]") {
  Output o = run_cli("presets");
  REQUIRE(o.code == 0);
  for (const char* name : {"shaw-base", "tiny-shaw", "adaptive-span-base", "tiny-span", "tiny-span-dynamic",
                           "ut-act-base", "tiny-ut-act", "tiny-ut-fixed", "transformer-xl-base", "tiny-xl"}) {
    INFO(name);
    CHECK(o.out.find(std::string(name) + "\t") != std::string::npos);
  }
}

TEST_CASE("atlas run preset:tiny-shaw --scores --dump writes the Shaw arrays", "[cli][variants]") {
  fs::path dir = fresh_dir("shaw");
  Output o = run_cli("run preset:tiny-shaw --text hello --scores --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(npy_shape(dir / "decoder.layer0.self_attn.shaw.rel_index.npy") == "5, 5");
  CHECK(npy_shape(dir / "decoder.layer1.self_attn.shaw.key_term.npy") == "4, 5, 5");
  CHECK(npy_shape(dir / "decoder.layer1.self_attn.shaw.value_term.npy") == "4, 5, 16");
  auto manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  bool found = false;
  for (const auto& a : manifest["arrays"])
    if (a["name"] == "decoder.layer0.self_attn.shaw.rel_index") found = a["dtype"] == "int32";
  CHECK(found);
  fs::remove_all(dir);
}

TEST_CASE("atlas run preset:tiny-xl --scores --dump writes the XL arrays per segment", "[cli][variants]") {
  fs::path dir = fresh_dir("xl");
  // 20 bytes: segments of 16 and 4 tokens; the second sees 16 memory rows.
  Output o = run_cli("run preset:tiny-xl --text abcdefghijklmnopqrst --scores --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(npy_shape(dir / "decoder.seg1.layer1.self_attn.npy") == "4, 4, 20");
  for (const char* t : {"a", "b", "c", "d"})
    CHECK(npy_shape(dir / (std::string("xl.seg1.layer0.terms.") + t + ".npy")) == "4, 4, 20");
  CHECK(npy_shape(dir / "xl.seg1.key_segment.npy") == "20,");
  CHECK(npy_shape(dir / "logits.npy") == "20, 256");
  fs::remove_all(dir);
}

TEST_CASE("atlas run preset:tiny-span --dump writes span.z and the span summary", "[cli][variants]") {
  fs::path dir = fresh_dir("span");
  Output o = run_cli("run preset:tiny-span --text hello --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(npy_shape(dir / "span.z.npy") == "2, 4");
  CHECK(npy_shape(dir / "span.flops_saved.npy") == "2, 4");
  CHECK(npy_shape(dir / "span.penalty.npy") == "2,");
  CHECK(npy_shape(dir / "span.mask_curve.npy") == "2, 4, 5");
  CHECK(npy_shape(dir / "decoder.layer0.self_attn.span.mask.npy") == "4, 5, 5");
  fs::remove_all(dir);
  Output d = run_cli("run preset:tiny-span-dynamic --text hello --dump " + dir.string());
  REQUIRE(d.code == 0);
  CHECK(npy_shape(dir / "decoder.layer1.self_attn.span.dynamic_z.npy") == "4, 5");
  fs::remove_all(dir);
}

TEST_CASE("atlas run --drop-layers / --drop-heads prints and dumps the ablation", "[cli][variants]") {
  fs::path dir = fresh_dir("ablation");
  Output o = run_cli("run preset:tiny-decoder --text hello --drop-layers 1 --drop-heads 0:2 --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(o.out.find("KL(full || ablated)") != std::string::npos);
  CHECK(npy_shape(dir / "ablation.kl.npy") == "5,");
  CHECK(npy_shape(dir / "ablation.heads.npy") == "1, 2");
  fs::remove_all(dir);
  Output r = run_cli("run preset:tiny-encoder --text hello --layerdrop-rate 0.5");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("dropped layers 1") != std::string::npos);  // depth 2 of 2
  Output bad = run_cli("run preset:tiny-decoder --text hello --drop-layers 9");
  CHECK(bad.code != 0);
  CHECK(bad.err.find("layer 9") != std::string::npos);
  Output rate = run_cli("run preset:tiny-decoder --text hello --layerdrop-rate 1.5");
  CHECK(rate.code != 0);
  CHECK(rate.err.find("--layerdrop-rate") != std::string::npos);
}

TEST_CASE("atlas run --logit-lens K dumps per-layer predictions", "[cli][variants]") {
  fs::path dir = fresh_dir("lens");
  Output o = run_cli("run preset:tiny-decoder --text hello --logit-lens 3 --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(npy_shape(dir / "decoder.logit_lens.ids.npy") == "2, 5, 3");
  CHECK(npy_shape(dir / "decoder.logit_lens.probs.npy") == "2, 5, 3");
  CHECK_FALSE(fs::exists(dir / "decoder.layer0.hidden.npy"));  // not asked for with --hidden
  fs::remove_all(dir);
}

TEST_CASE("atlas run preset:tiny-ut-act --dump writes the ACT arrays", "[cli][variants]") {
  fs::path dir = fresh_dir("act");
  Output o = run_cli("run preset:tiny-ut-act --text hello --dump " + dir.string());
  INFO(o.err);
  REQUIRE(o.code == 0);
  const std::string s = npy_shape(dir / "act.halting.npy");
  CHECK(s.substr(s.find(',')) == ", 5");  // [steps, L]
  CHECK(npy_shape(dir / "act.ponder.npy") == "5,");
  CHECK(npy_shape(dir / "act.steps.npy") == "5,");
  CHECK(npy_shape(dir / "act.remainder.npy") == "5,");
  CHECK(fs::exists(dir / "decoder.step1.self_attn.npy"));
  fs::remove_all(dir);
}
