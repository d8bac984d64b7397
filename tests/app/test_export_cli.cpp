// `atlas export` reads the attention-map catalogue: a Transformer-XL segment by --segment, a
// Universal Transformer step by --step, and refusals that name what exists. Drives the real
// executable; the .npy headers are read here as text.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/formats/npy.h"
#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;
using atlas_test::run_atlas;

namespace {

// 36 bytes: tiny-xl's segments of 16 tokens are 16, 16 and 4; segment 1's keys are segment 0
// (16 memory tokens) then its own 16.
const std::string kText = "abababababababababababababababababab";

std::string npyHeader(const fs::path& p) {
  const std::string npy = read_all(p);
  REQUIRE(npy.size() > 10);
  const size_t len = uint8_t(npy[8]) | (uint8_t(npy[9]) << 8);
  return npy.substr(10, len);
}

}  // namespace

TEST_CASE("atlas export --segment draws a Transformer-XL segment; a missing one is refused", "[cli][export]") {
  const fs::path dir = fresh_dir("export-xl");
  fs::create_directories(dir);
  const std::string run = "export preset:tiny-xl --text " + kText + " ";  // heatmap: the default view
  const Output o = run_atlas(run + "--segment 1 --out " + (dir / "seg1.svg").string());
  if (atlas_test::no_ui(o)) {
    WARN("atlas was built without the Qt UI: export not tested");
    return;
  }
  INFO(o.err);
  REQUIRE(o.code == 0);
  const std::string svg = read_all(dir / "seg1.svg");
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("segment 1") != std::string::npos);
  CHECK(svg.find("16 memory") != std::string::npos);  // the title says what the keys are

  // The data: segment 1 is 16 queries over 32 keys; the default segment 0 has no memory.
  REQUIRE(run_atlas(run + "--segment 1 --out " + (dir / "seg1.npy").string()).code == 0);
  CHECK_THAT(npyHeader(dir / "seg1.npy"), Catch::Contains("'shape': (16, 32)"));
  REQUIRE(run_atlas(run + "--out " + (dir / "seg0.npy").string()).code == 0);
  CHECK_THAT(npyHeader(dir / "seg0.npy"), Catch::Contains("'shape': (16, 16)"));
  // The model grid of one segment: [layers, heads, Lq, Lk].
  REQUIRE(run_atlas(run + "--view model --segment 2 --out " + (dir / "grid.npy").string()).code == 0);
  CHECK_THAT(npyHeader(dir / "grid.npy"), Catch::Contains("'shape': (2, 4, 4, 20)"));

  const Output bad = run_atlas(run + "--segment 99 --out " + (dir / "bad.svg").string());
  CHECK(bad.code != 0);
  CHECK_THAT(bad.err, Catch::Contains("--segment 99") && Catch::Contains("3 segments") && Catch::Contains("0 to 2"));
  CHECK_FALSE(fs::exists(dir / "bad.svg"));
  const Output step = run_atlas(run + "--step 1 --out " + (dir / "step.svg").string());
  CHECK(step.code != 0);
  CHECK_THAT(step.err, Catch::Contains("Universal Transformer"));
  fs::remove_all(dir);
}

TEST_CASE("atlas export --step N draws a Universal Transformer step, the same as --layer N-1", "[cli][export]") {
  const fs::path dir = fresh_dir("export-ut");
  fs::create_directories(dir);
  const std::string run = "export preset:tiny-ut-act --text " + kText + " ";
  const Output o = run_atlas(run + "--step 1 --out " + (dir / "step1.svg").string());
  if (atlas_test::no_ui(o)) {
    WARN("atlas was built without the Qt UI: export not tested");
    return;
  }
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK(read_all(dir / "step1.svg").find("step 1") != std::string::npos);
  REQUIRE(run_atlas(run + "--step 1 --out " + (dir / "step1.npy").string()).code == 0);
  REQUIRE(run_atlas(run + "--layer 0 --out " + (dir / "layer0.npy").string()).code == 0);
  CHECK(read_all(dir / "step1.npy") == read_all(dir / "layer0.npy"));

  const Output seg = run_atlas(run + "--segment 1 --out " + (dir / "seg.svg").string());
  CHECK(seg.code != 0);
  CHECK_THAT(seg.err, Catch::Contains("Transformer-XL") && Catch::Contains("no segments"));
  const Output zero = run_atlas(run + "--step 0 --out " + (dir / "zero.svg").string());
  CHECK(zero.code != 0);
  CHECK_THAT(zero.err, Catch::Contains("--step"));
  fs::remove_all(dir);
}

TEST_CASE("atlas export --image draws a ViT's map of an image; the data equal atlas run's dump", "[cli][export][image]") {
  const fs::path dir = fresh_dir("export-image");
  fs::create_directories(dir);
  const fs::path ppm = dir / "gradient.ppm";
  {
    std::ofstream out(ppm, std::ios::binary);  // 20 x 24 pixels, a colour gradient
    out << "P6\n24 20\n255\n";
    for (int y = 0; y < 20; ++y)
      for (int x = 0; x < 24; ++x) {
        out.put(char(10 * x));
        out.put(char(12 * y));
        out.put(char(5 * (x + y)));
      }
  }
  const std::string model = "preset:tiny-vit --image " + ppm.string() + " ";
  const Output o = run_atlas("export " + model + "--layer 1 --head 2 --out " + (dir / "map.npy").string());
  if (atlas_test::no_ui(o)) {
    WARN("atlas was built without the Qt UI: export not tested");
    return;
  }
  INFO(o.err);
  REQUIRE(o.code == 0);
  const Output run = run_atlas("run " + model + "--dump " + (dir / "dump").string());
  INFO(run.err);
  REQUIRE(run.code == 0);
  // The oracle: the same run's dumped [heads, L, L] array, head 2, by position.
  const atlas::Tensor all = atlas::read_npy((dir / "dump" / "encoder.layer1.attn.npy").string());
  const atlas::Tensor map = atlas::read_npy((dir / "map.npy").string());
  REQUIRE(all.shape.size() == 3);
  const int64_t L = all.shape[1];
  REQUIRE(map.shape == std::vector<int64_t>{L, L});
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) REQUIRE(map.data[size_t(i * L + j)] == all.data[size_t((2 * L + i) * L + j)]);

  // A figure of the rollout (a ViT's usual view), and the refusals.
  CHECK(run_atlas("export " + model + "--head rollout --out " + (dir / "rollout.svg").string()).code == 0);
  CHECK(fs::file_size(dir / "rollout.svg") > 1000);
  const Output text_model = run_atlas("export preset:tiny-encoder --image " + ppm.string() + " --out " + (dir / "x.svg").string());
  CHECK(text_model.code != 0);
  CHECK_THAT(text_model.err, Catch::Contains("does not take images"));
  const Output both = run_atlas("export " + model + "--text abc --out " + (dir / "y.svg").string());
  CHECK(both.code != 0);
  CHECK_THAT(both.err, Catch::Contains("exactly one of --text, --text-file or --image"));
}

TEST_CASE("atlas export --head flow and --value-weighted; atlas run --value-norms dumps the norms", "[cli][export][flow]") {
  const fs::path dir = fresh_dir("export-aggregates");
  fs::create_directories(dir);
  Output o = run_atlas("run preset:tiny-decoder --text abcab --value-norms --dump " + (dir / "dump").string());
  REQUIRE(o.code == 0);
  const atlas::Tensor norms = atlas::read_npy((dir / "dump" / "decoder.layer1.self_attn.value_norms.npy").string());
  CHECK(norms.shape == atlas::Shape{4, 5});
  o = run_atlas("export preset:tiny-decoder --text abcab --head 2 --layer 1 --value-weighted --out " +
                (dir / "vw.npy").string());
  if (atlas_test::no_ui(o)) return;
  REQUIRE(o.code == 0);
  // The figure's data: alpha_ij times the norm of key j, by position.
  const atlas::Tensor vw = atlas::read_npy((dir / "vw.npy").string());
  const atlas::Tensor attn = atlas::read_npy((dir / "dump" / "decoder.layer1.self_attn.npy").string());
  REQUIRE(vw.shape == atlas::Shape{5, 5});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j <= i; ++j)
      CHECK(vw.data[size_t(i * 5 + j)] == Approx(attn.data[size_t((2 * 5 + i) * 5 + j)] * norms.data[size_t(2 * 5 + j)]));
  o = run_atlas("export preset:tiny-encoder --text abcab --head flow --out " + (dir / "flow.svg").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(read_all(dir / "flow.svg"), Catch::Contains("attention flow through layers 0-1"));
  o = run_atlas("export preset:tiny-encoder --text abcab --head flow --out " + (dir / "flow.npy").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(npyHeader(dir / "flow.npy"), Catch::Contains("(5, 5)"));
  // A long input computes one row: --query's, else the decoder's last.
  const std::string long_text = " --text " + std::string(50, 'z') + " --layer 1 --head flow --out ";
  o = run_atlas("export preset:tiny-decoder" + long_text + (dir / "flow-last.npy").string());
  REQUIRE(o.code == 0);
  o = run_atlas("export preset:tiny-decoder" + long_text + (dir / "flow-q.npy").string() + " --query 17");
  REQUIRE(o.code == 0);
  const atlas::Tensor last = atlas::read_npy((dir / "flow-last.npy").string());
  const atlas::Tensor row17 = atlas::read_npy((dir / "flow-q.npy").string());
  REQUIRE(row17.shape == atlas::Shape{50, 50});
  // The flow from token 0 into any token is positive (the residual path); hatched rows are 0.
  CHECK(last.data[size_t(49 * 50)] > 0.0f);
  CHECK(last.data[size_t(17 * 50)] == 0.0f);
  CHECK(row17.data[size_t(17 * 50)] > 0.0f);
  CHECK(row17.data[size_t(49 * 50)] == 0.0f);
  CHECK_THAT(run_atlas("export preset:tiny-decoder --text ab --head 0 --query 1 --out " + (dir / "x.svg").string()).err,
             Catch::Contains("--head flow"));
  CHECK_THAT(run_atlas("export preset:tiny-decoder --text ab --view model --value-weighted --out " +
                       (dir / "x.svg").string()).err,
             Catch::Contains("heatmap view"));
  CHECK_THAT(run_atlas("export preset:tiny-decoder --text ab --head mean --value-weighted --out " +
                       (dir / "x.svg").string()).err,
             Catch::Contains("per head"));
  fs::remove_all(dir);
}

TEST_CASE("atlas export --view model --shared-scale puts every tile on one colour scale", "[cli][export]") {
  const fs::path dir = fresh_dir("export-shared-scale");
  fs::create_directories(dir);
  const std::string run = "export preset:tiny-encoder --text abcab --view model ";
  Output o = run_atlas(run + "--shared-scale --out " + (dir / "shared.svg").string());
  if (atlas_test::no_ui(o)) return;
  INFO(o.err);
  REQUIRE(o.code == 0);
  REQUIRE(run_atlas(run + "--out " + (dir / "own.svg").string()).code == 0);
  // The colour bar says which scale the tiles are on.
  CHECK_THAT(read_all(dir / "shared.svg"), Catch::Contains("attention weight (all tiles)"));
  CHECK_THAT(read_all(dir / "own.svg"), Catch::Contains("fraction of tile max"));
  // The data are the weights either way.
  REQUIRE(run_atlas(run + "--shared-scale --out " + (dir / "shared.npy").string()).code == 0);
  REQUIRE(run_atlas(run + "--out " + (dir / "own.npy").string()).code == 0);
  CHECK(read_all(dir / "shared.npy") == read_all(dir / "own.npy"));
  o = run_atlas("export preset:tiny-encoder --text abcab --shared-scale --out " + (dir / "x.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("--view model"));
  o = run_atlas(run + "--shared-scale --normalize row --out " + (dir / "x.svg").string());
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("contradict"));
  CHECK_FALSE(fs::exists(dir / "x.svg"));
  fs::remove_all(dir);
}

TEST_CASE("atlas export --panel draws a variant panel's plot; its data are the run's arrays", "[cli][export][panels]") {
  const fs::path dir = fresh_dir("export-panel");
  fs::create_directories(dir);
  const std::string text = " --text 011010-010011 ";  // labels repeat: bars are per position
  Output o = run_atlas("export preset:tiny-ut-act" + text + "--panel act --list-plots");
  if (atlas_test::no_ui(o)) return;
  INFO(o.err);
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::StartsWith("0: ponder steps N(t)") && Catch::Contains("1: halting probability"));
  o = run_atlas("export preset:tiny-ut-act" + text + "--panel act --plot ponder --out " + (dir / "ponder.npy").string());
  REQUIRE(o.code == 0);
  REQUIRE(run_atlas("run preset:tiny-ut-act" + text + "--dump " + (dir / "dump").string()).code == 0);
  const atlas::Tensor bars = atlas::read_npy((dir / "ponder.npy").string());
  const atlas::Tensor steps = atlas::read_npy((dir / "dump" / "act.steps.npy").string());
  const atlas::Tensor rem = atlas::read_npy((dir / "dump" / "act.remainder.npy").string());
  REQUIRE(bars.shape == atlas::Shape{13, 3});
  for (size_t i = 0; i < 13; ++i) {
    CHECK(bars.data[i * 3] == steps.data[i]);
    CHECK(bars.data[i * 3 + 1] == rem.data[i]);
  }
  // Figures, and the panels that compute their arrays after the run.
  REQUIRE(run_atlas("export preset:tiny-ut-act" + text + "--panel act --plot 1 --out " + (dir / "h.svg").string()).code == 0);
  CHECK_THAT(read_all(dir / "h.svg"), Catch::Contains("<svg"));
  o = run_atlas("export preset:tiny-decoder --text abcab --panel ablation --drop-heads 0:1 --out " +
                (dir / "kl.npy").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(npyHeader(dir / "kl.npy"), Catch::Contains("(5, 1)"));
  REQUIRE(run_atlas("export preset:tiny-decoder --text abcab --panel lens --out " + (dir / "lens.png").string()).code == 0);
  // Refusals name the problem; nothing is written.
  auto refused = [&](const std::string& args, const std::string& why) {
    const Output r = run_atlas(args + " --out " + (dir / "x.svg").string());
    CHECK(r.code != 0);
    CHECK_THAT(r.err, Catch::Contains(why));
  };
  refused("export preset:tiny-decoder --text abc --panel lsh", "nothing to draw");
  refused("export preset:tiny-decoder --text abc --panel foo", "the panels are span, alibi, gates");
  // The help lists every registered panel, a module's own among them.
  o = run_atlas("export --help");
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("Panels: span, alibi, gates") && Catch::Contains("rope") &&
                        Catch::Contains("qk"));
  refused("export preset:tiny-decoder --text abc --panel heads --plot zzz", "names no plot");
  refused("export preset:tiny-decoder --text abc --panel heads --plot 99", "--plot 99 is out of range: the Head statistics panel has ");
  refused("export preset:tiny-decoder --text abc --panel ablation", "--drop-heads");
  refused("export preset:tiny-decoder --text abc --panel act --view model", "not both");
  refused("export preset:tiny-decoder --text abc --view model --plot 1", "goes with --panel");
  CHECK_FALSE(fs::exists(dir / "x.svg"));
  fs::remove_all(dir);
}
