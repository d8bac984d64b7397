#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/tensor/error.h"
#include "core/formats/model_io.h"
#include "core/model/presets.h"
#include "core/formats/safetensors.h"

using namespace atlas;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("atlas-test-model-io-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("a saved model loads back with identical weights and outputs", "[model_io]") {
  fs::path dir = scratch_dir("roundtrip");
  Model m = load_model("preset:tiny-encoder-decoder");
  save_model(m, dir.string());
  REQUIRE(fs::exists(dir / "config.json"));
  REQUIRE(fs::exists(dir / "model.safetensors"));
  Model back = load_model(dir.string());
  CHECK(back.params().at("decoder.layer1.cross_attn.wq").data ==
        m.params().at("decoder.layer1.cross_attn.wq").data);
  auto a = m.run("abc", "xy", {}), b = back.run("abc", "xy", {});
  CHECK(a.output.data == b.output.data);
  fs::remove_all(dir);
}

TEST_CASE("a single .safetensors file carries its config in __metadata__", "[model_io]") {
  fs::path dir = scratch_dir("single");
  Model m = load_model("preset:tiny-decoder", LoadOptions{7});
  write_safetensors((dir / "m.safetensors").string(), m.params(),
                    {{"config", config_to_json(m.config())}});
  Model back = load_model((dir / "m.safetensors").string());
  CHECK(back.config().n_layers == 2);
  CHECK(back.params().at("embed.positions").data == m.params().at("embed.positions").data);
  write_safetensors((dir / "noconfig.safetensors").string(), m.params(), {});
  CHECK_THROWS_WITH(load_model((dir / "noconfig.safetensors").string()),
                    Catch::Contains("no \"config\" entry"));
  fs::remove_all(dir);
}

TEST_CASE("preset seeds change the weights; presets reject a typo with a suggestion", "[model_io]") {
  Model a = load_model("preset:tiny-encoder", LoadOptions{1}), b = load_model("preset:tiny-encoder", LoadOptions{2});
  CHECK(a.params().at("embed.tokens").data != b.params().at("embed.tokens").data);
  CHECK_THROWS_WITH(load_model("preset:tiny-encodr"), Catch::Contains("did you mean \"tiny-encoder\""));
}

TEST_CASE("bad model directories name the file and the problem", "[model_io][errors]") {
  fs::path dir = scratch_dir("bad");
  CHECK_THROWS_WITH(load_model((dir / "nope").string()), Catch::Contains("no such file or directory"));
  CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("no config.json"));
  Model m = load_model("preset:tiny-encoder");
  save_model(m, dir.string());

  SECTION("malformed config") {
    write_file(dir / "config.json", "{\"d_model\": 64,, }");
    CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("config.json") && Catch::Contains("malformed JSON"));
  }
  SECTION("misspelled key") {
    write_file(dir / "config.json", "{\"n_head\": 4}");
    CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("did you mean \"n_heads\""));
  }
  SECTION("config that disagrees with the weights") {
    ModelConfig c = m.config();
    c.d_ff = 128;
    write_file(dir / "config.json", config_to_json(c));
    CHECK_THROWS_WITH(load_model(dir.string()),
                      Catch::Contains("model.safetensors") && Catch::Contains("encoder.layer0.ffn.w1") &&
                          Catch::Contains("config expects [128, 64]"));
  }
  SECTION("truncated weights") {
    fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") - 10);
    CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("model.safetensors"));
  }
  SECTION("pickle checkpoints are refused with advice") {
    fs::remove(dir / "model.safetensors");
    write_file(dir / "pytorch_model.bin", "PK");
    CHECK_THROWS_WITH(load_model(dir.string()), Catch::Contains("convert it to model.safetensors"));
  }
  fs::remove_all(dir);
}
