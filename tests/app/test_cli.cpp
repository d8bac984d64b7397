// Drives the real `atlas` executable as a user would and checks exit codes, stdout, stderr and
// the files it writes. The .npy headers are parsed here by hand, independently of core/npy.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/app/cli_runner.h"

namespace fs = std::filesystem;
using atlas_test::fresh_dir;
using atlas_test::Output;
using atlas_test::read_all;

namespace {

Output atlas_cli(const std::string& args) { return atlas_test::run_atlas(args); }

// Figures need the Qt UI; the sanitizer build has none (and no export verb).
bool built_with_ui() {
  static const bool ui = atlas_test::run_atlas("export --help").code == 0;
  return ui;
}

}  // namespace

TEST_CASE("atlas presets prints one name<TAB>description line per preset", "[cli]") {
  Output o = atlas_cli("presets");
  REQUIRE(o.code == 0);
  for (const char* name : {"vanilla-base", "vanilla-big", "base-encoder", "tiny-encoder",
                           "tiny-decoder", "tiny-encoder-decoder", "tiny-scalenorm"})
    CHECK_THAT(o.out, Catch::Contains(std::string("\n") + name + "\t") ||
                          Catch::StartsWith(std::string(name) + "\t"));
  std::istringstream lines(o.out);
  for (std::string line; std::getline(lines, line);) CHECK(line.find('\t') != std::string::npos);
}

TEST_CASE("atlas run --dump writes a manifest and .npy arrays", "[cli]") {
  fs::path dir = fresh_dir("dump");
  Output o = atlas_cli("run preset:tiny-encoder-decoder --text 'hello' --target 'hi' --dump " + dir.string());
  REQUIRE(o.code == 0);
  auto manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  CHECK(manifest["tokens"].size() == 5);
  CHECK(manifest["tokens"][0]["label"] == "h");
  CHECK(manifest["target_tokens"].size() == 3);  // <bos> h i
  CHECK(manifest["target_tokens"][0]["label"] == "<bos>");
  std::set<std::string> names;
  for (const auto& a : manifest["arrays"]) names.insert(a["name"].get<std::string>());
  for (const char* n : {"positional", "decoder.positional", "encoder.layer0.attn", "encoder.layer1.attn",
                        "decoder.layer0.self_attn", "decoder.layer1.cross_attn", "logits"})
    CHECK(names.count(n));
  // encoder.layer0.attn.npy: v1.0 header, '<f4', shape (4, 5, 5), then 100 floats.
  std::string npy = read_all(dir / "decoder.layer1.cross_attn.npy");
  REQUIRE(npy.size() > 10);
  CHECK(npy.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = uint8_t(npy[8]) | (uint8_t(npy[9]) << 8);
  CHECK((10 + header_len) % 64 == 0);
  const std::string header = npy.substr(10, header_len);
  CHECK_THAT(header, Catch::Contains("'descr': '<f4'") && Catch::Contains("'shape': (4, 3, 5)"));
  CHECK(npy.size() == 10 + header_len + 4 * 3 * 5 * 4);
  // each row of a cross-attention head sums to 1
  const float* p = reinterpret_cast<const float*>(npy.data() + 10 + header_len);
  double row = 0;
  for (int j = 0; j < 5; ++j) row += p[j];
  CHECK(row == Approx(1.0).epsilon(1e-5));
  std::string mask = read_all(dir / "decoder.layer0.self_attn.mask.npy");
  CHECK_THAT(mask, Catch::Contains("'descr': '<i4'"));
  fs::remove_all(dir);
}

TEST_CASE("atlas init writes a model directory that atlas run reads", "[cli]") {
  fs::path dir = fresh_dir("init");
  REQUIRE(atlas_cli("init --preset tiny-decoder --seed 3 --out " + dir.string()).code == 0);
  CHECK(fs::exists(dir / "config.json"));
  Output o = atlas_cli("run " + dir.string() + " --text 'abc'");
  CHECK(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("decoder.layer1.self_attn"));
  fs::remove_all(dir);
}

TEST_CASE("atlas info reproduces seed 003's BERT-base attention memory", "[cli]") {
  fs::path dir = fresh_dir("bert");
  fs::create_directories(dir);
  std::ofstream(dir / "bert.json") << R"({"name": "bert-like", "architecture": "encoder",
    "vocab_size": 30522, "tokenizer": {"type": "bytes"}, "d_model": 768, "n_heads": 12,
    "d_ff": 3072, "n_layers": 12, "max_positions": 1024, "positional": "learned", "output": "none"})";
  // A directory needs weights; `atlas info` of a preset-like config goes through a single file.
  Output o = atlas_cli("info preset:base-encoder --length 512");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("parameters:"));
  // base-encoder: 6 layers, 8 heads, d_head 64: (8*512^2*4 + 8*64*512*4)/2^20 * 6 = 54.0 MB
  CHECK_THAT(o.out, Catch::Contains("attention + QK memory per example: 54.0 MB"));
  fs::remove_all(dir);
}

TEST_CASE("atlas bench --json prints median_ms and gflops", "[cli]") {
  Output o = atlas_cli("bench preset:tiny-encoder --length 32 --repeats 3 --json");
  REQUIRE(o.code == 0);
  auto j = nlohmann::json::parse(o.out);
  CHECK(j["median_ms"].get<double>() > 0);
  CHECK(j["gflops"].get<double>() > 0);
}

TEST_CASE("every verb has --help", "[cli]") {
  for (const char* verb : {"presets", "init", "info", "run", "bench", "devices"}) {
    Output o = atlas_cli(std::string(verb) + " --help");
    INFO(verb);
    CHECK(o.code == 0);
    CHECK_THAT(o.out, Catch::Contains("usage: atlas"));
  }
}

TEST_CASE("bad invocations exit non-zero with one line on stderr", "[cli][errors]") {
  struct Case {
    const char* args;
    const char* message;
  };
  fs::path dir = fresh_dir("bad");
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << "{\"d_model\": 100, \"n_heads\": 8}";
  std::ofstream(dir / "model.safetensors") << "xx";
  const std::string bad_dir = dir.string();
  const Case cases[] = {
      {"frobnicate", "unknown verb"},
      {"run preset:tiny-encoder --txt hi", "did you mean --text?"},
      {"run preset:tiny-encoder", "exactly one of --text, --text-file or --image"},
      {"run preset:nope --text hi", "unknown preset"},
      {"run preset:tiny-encoder --text ''", "empty"},
      {"run /nonexistent/model --text hi", "no such file or directory"},
      {"bench preset:tiny-decoder --length 5000", "--length must be between 1 and 1024"},
      {"run preset:tiny-encoder --text-file /nonexistent.txt", "/nonexistent.txt: no such file"},
  };
  for (const Case& c : cases) {
    Output o = atlas_cli(c.args);
    INFO(c.args << " -> " << o.err);
    CHECK(o.code != 0);
    CHECK_THAT(o.err, Catch::Contains(c.message));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  }
  Output o = atlas_cli("run " + bad_dir + " --text hi");
  CHECK(o.code != 0);
  CHECK_THAT(o.err, Catch::Contains("not divisible by n_heads"));
  fs::remove_all(dir);
}

TEST_CASE("atlas demos lists the trained demos and demo:NAME runs", "[cli][demos]") {
  const auto list = atlas_cli("demos");
  CHECK(list.code == 0);
  CHECK_THAT(list.out, Catch::Contains("demo:induction") && Catch::Contains("trained by: atlas train"));
  const auto run = atlas_cli("run demo:induction --text atlasofheadsatlasofhead");
  CHECK(run.code == 0);
  // The next letter after "...atlasofhead" in the repeat is "s" (the induction rule).
  CHECK_THAT(run.out, Catch::Contains("prediction at the last position: s "));
}

TEST_CASE("atlas heads prints, writes CSV and .npy, and refuses bad arguments", "[cli][heads]") {
  Output o = atlas_cli("heads demo:induction --text atlasofheadsatlasofheads --top 2");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("decoder.layer1.self_attn") && Catch::Contains("highest induction:"));
  const fs::path dir = fresh_dir("heads");
  fs::create_directories(dir);
  o = atlas_cli("heads demo:induction --text atlasofheads --csv " + (dir / "h.csv").string());
  REQUIRE(o.code == 0);
  const std::string csv = read_all(dir / "h.csv");
  CHECK_THAT(csv, Catch::StartsWith("map,stack,sublayer,layer,segment,step,head,entropy,distance,sink,"
                                    "previous_token,duplicate_token,induction\n"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 4);  // 2 layers x 4 heads
  o = atlas_cli("heads demo:induction --induction-probe 8 --npy " + (dir / "npy").string());
  REQUIRE(o.code == 0);
  CHECK(fs::exists(dir / "npy" / "decoder.self_attn.induction.npy"));
  CHECK(atlas_cli("heads demo:induction").code != 0);  // no input
  CHECK_THAT(atlas_cli("heads demo:induction --text a --induction-probe 4").err, Catch::Contains("exactly one of"));
  CHECK_THAT(atlas_cli("heads demo:induction --induction-probe 100000").err, Catch::Contains("--induction-probe"));
  // An encoder-decoder takes its decoder input with --target: both stacks' self-attention.
  o = atlas_cli("heads preset:tiny-encoder-decoder --text abcd --target abc --top 0");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("encoder.layer0.attn") && Catch::Contains("decoder.layer0.self_attn"));
  CHECK_THAT(o.out, !Catch::Contains("cross_attn"));
  fs::remove_all(dir);
}

TEST_CASE("atlas ablate sweeps heads and layers; a zeroed head equals atlas run --drop-heads", "[cli][ablate]") {
  const std::string text = " --text atlasofheadsatlasofheads";
  Output o = atlas_cli("ablate demo:induction" + text + " --sweep heads --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["layers"] == 2);
  CHECK(j["heads"] == 4);
  REQUIRE(j["cells"].size() == 8);
  // The per-spec ablation of one head prints the same mean KL (6 significant digits).
  for (auto [layer, head] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}}) {
    const Output run = atlas_cli("run demo:induction" + text + " --drop-heads " + std::to_string(layer) + ":" +
                                 std::to_string(head));
    REQUIRE(run.code == 0);
    const size_t at = run.out.find("next-token distributions: mean ");
    REQUIRE(at != std::string::npos);
    const double mean = std::stod(run.out.substr(at + 31));
    const double cell = j["cells"][size_t(layer * 4 + head)]["metric"].get<double>();
    CHECK(cell == Approx(mean).epsilon(2e-5));
  }
  o = atlas_cli("ablate demo:induction" + text + " --sweep layers --mode mean --metric loss --top 1");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("mean ablation of layers, metric loss") && Catch::Contains("largest effects:"));
  const fs::path dir = fresh_dir("ablate");
  fs::create_directories(dir);
  o = atlas_cli("ablate demo:induction" + text + " --sweep heads --out " + (dir / "s.csv").string());
  REQUIRE(o.code == 0);
  const std::string csv = read_all(dir / "s.csv");
  CHECK_THAT(csv, Catch::StartsWith("layer,head,metric,effect\n0,0,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 8);
  o = atlas_cli("ablate demo:induction" + text + " --sweep heads --out " + (dir / "s.npy").string());
  REQUIRE(o.code == 0);
  CHECK_THAT(read_all(dir / "s.npy"), Catch::Contains("'shape': (2, 4)"));
  for (const char* ext : {"svg", "png", "pdf"}) {
    if (!built_with_ui()) break;
    o = atlas_cli("ablate demo:induction" + text + " --sweep heads --metric logit-diff --token-a s --token-b a --out " +
                  (dir / (std::string("s.") + ext)).string());
    INFO(o.err);
    REQUIRE(o.code == 0);
    CHECK(fs::file_size(dir / (std::string("s.") + ext)) > 1000);
  }
  CHECK_THAT(atlas_cli("ablate demo:induction" + text).err, Catch::Contains("--sweep"));
  CHECK_THAT(atlas_cli("ablate demo:induction" + text + " --sweep heads --metric kld").err,
             Catch::Contains("kl, loss, logit-diff, cosine"));
  CHECK_THAT(atlas_cli("ablate demo:induction" + text + " --sweep heads --metric logit-diff --token-a s").err,
             Catch::Contains("--token-b"));
  CHECK_THAT(atlas_cli("ablate demo:induction" + text + " --sweep heads --metric logit-diff --token-a ab --token-b a").err,
             Catch::Contains("2 tokens"));
  CHECK_THAT(atlas_cli("ablate demo:induction" + text + " --sweep heads --token-a s").err,
             Catch::Contains("belong to --metric logit-diff"));
  CHECK_THAT(atlas_cli("ablate demo:induction" + text + " --sweep heads --out " + (dir / "s.txt").string()).err,
             Catch::Contains("unknown format"));
  CHECK_THAT(atlas_cli("ablate demo:induction --text a --sweep heads --metric loss").err, Catch::Contains("two tokens"));
  fs::remove_all(dir);
}

TEST_CASE("atlas compare: two inputs or two models, table, CSV, JSON and views", "[cli][compare]") {
  Output o = atlas_cli("compare demo:induction --text atlasofheadsatlasofheads --text-b atlasofheadsatlasofhexds --top 2");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("mean_tv") && Catch::Contains("most different:"));
  // The same input on one model twice is refused; with itself as MODEL_B every distance is 0.
  CHECK_THAT(atlas_cli("compare demo:induction --text abc").err, Catch::Contains("second model"));
  o = atlas_cli("compare demo:induction demo:induction --text abcabc --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  REQUIRE(j.size() == 8);
  for (const auto& row : j) CHECK(row["mean_tv"].get<double>() == 0.0);
  const fs::path dir = fresh_dir("compare");
  fs::create_directories(dir);
  o = atlas_cli("compare demo:induction preset:tiny-decoder --text abcabc --csv " + (dir / "c.csv").string());
  REQUIRE(o.code == 0);
  const std::string csv = read_all(dir / "c.csv");
  CHECK_THAT(csv, Catch::StartsWith("map,stack,sublayer,layer,segment,step,head,mean_tv,max_abs\n"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 8);
  for (const char* view : {"difference", "side", "heads"})
    for (const char* ext : {"svg", "png", "npy"}) {
      if (!built_with_ui()) break;
      const fs::path out = dir / (std::string(view) + "." + ext);
      o = atlas_cli("compare demo:induction --text atlasofheads --text-b atlasofhexds --layer 1 --head 2 --view " +
                    std::string(view) + " --out " + out.string());
      INFO(o.err);
      REQUIRE(o.code == 0);
      CHECK(fs::file_size(out) > 100);
    }
  // The difference as data: [Lq, Lk] with A - B.
  if (built_with_ui()) CHECK_THAT(read_all(dir / "difference.npy"), Catch::Contains("'shape': (12, 12)"));
  CHECK_THAT(atlas_cli("compare demo:induction --text abc --text-b abcd").err, Catch::Contains("same number of tokens"));
  CHECK_THAT(atlas_cli("compare demo:induction --text abc --text-b abd --view side").err, Catch::Contains("--out"));
  CHECK_THAT(atlas_cli("compare demo:induction --text abc --text-b abd --view top --out " + (dir / "x.svg").string()).err,
             Catch::Contains("difference, side, heads"));
  if (built_with_ui())
    CHECK_THAT(atlas_cli("compare demo:induction --text abc --text-b abd --head 9 --out " + (dir / "x.svg").string()).err,
               Catch::Contains("--head 9 is out of range: the decoder self-attention has 4 heads (0 to 3"));
  CHECK_THAT(atlas_cli("compare a b c --text abc").err, Catch::Contains("MODEL_A and optionally MODEL_B"));
  fs::remove_all(dir);
}

TEST_CASE("atlas search ranks heads by the attention of query tokens on key tokens", "[cli][search]") {
  Output o = atlas_cli("search demo:induction --text atlasofheadsatlasofheads --query-token s --key-token o --top 3");
  REQUIRE(o.code == 0);
  CHECK_THAT(o.out, Catch::Contains("heads by the attention of queries \"s\" on keys \"o\"") &&
                        Catch::Contains("decoder.layer"));
  o = atlas_cli("search demo:induction --text atlasofheadsatlasofheads --query-token s --key-token o --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  REQUIRE(j.size() == 8);
  for (size_t i = 1; i < j.size(); ++i) CHECK(j[i - 1]["score"].get<double>() >= j[i]["score"].get<double>());
  CHECK_THAT(atlas_cli("search demo:induction --text abc --query-token z --key-token a").err,
             Catch::Contains("no token of the input matches \"z\""));
  CHECK_THAT(atlas_cli("search demo:induction --text abc --query-token a").err, Catch::Contains("--key-token"));
}

TEST_CASE("atlas run --maps on-demand dumps queries, keys and the rule; export says it drew an overview",
          "[cli][on-demand]") {
  fs::path dir = fresh_dir("on_demand");
  Output o = atlas_cli("run preset:tiny-llama --text 'hello hello' --maps on-demand --dump " + dir.string());
  REQUIRE(o.code == 0);
  const auto manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  std::set<std::string> names;
  for (const auto& a : manifest["arrays"]) names.insert(a["name"].get<std::string>());
  CHECK(names.count("decoder.layer0.self_attn.q"));
  CHECK(names.count("decoder.layer0.self_attn.k"));
  CHECK_FALSE(names.count("decoder.layer0.self_attn"));       // no [heads, L, L] maps...
  CHECK_FALSE(names.count("decoder.layer0.self_attn.mask"));  // ...nor masks
  const auto& m = manifest["attention_maps"][0];
  CHECK(m["storage"] == "on-demand");
  CHECK(m["on_demand"]["causal"] == true);
  CHECK(m["on_demand"]["scale"].get<double>() == Approx(0.25));  // 1 / sqrt(d_head 16)
  fs::remove_all(dir);
  // A model whose attention keeps its own storage says the flag does not apply to it.
  Output sparse = atlas_cli("run preset:tiny-sparse-fixed --text 'hello hello' --maps on-demand");
  CHECK(sparse.code == 0);
  CHECK_THAT(sparse.err, Catch::Contains("warning: --maps on-demand computes full softmax attention on request; "
                                         "tiny-sparse-fixed's attention"));
  CHECK_THAT(atlas_cli("run preset:tiny-llama --text hi --maps on-demand").err, !Catch::Contains("warning"));
  Output bad = atlas_cli("run preset:tiny-llama --text hi --maps sometimes");
  CHECK(bad.code != 0);
  CHECK_THAT(bad.err, Catch::Contains("--maps 'sometimes' is not one of auto, stored, on-demand"));
  // Over 2048 x 2048 cells the heatmap export draws the overview of block maxima, and says so.
  fs::path work = fresh_dir("on_demand_export");
  fs::create_directories(work);
  std::ofstream(work / "t.txt") << std::string(2100, 'a');
  const fs::path png = work / "h.png";
  Output e = atlas_cli("export preset:tiny-rope --text-file " + (work / "t.txt").string() +
                       " --maps on-demand --view heatmap --out " + png.string());
  if (atlas_test::no_ui(e)) {
    WARN("atlas was built without the Qt UI: export not tested");
    fs::remove_all(work);
    return;
  }
  CHECK(e.code == 0);
  CHECK(fs::file_size(png) > 1000);
  CHECK_THAT(e.err, Catch::Contains("computed on request: the figure is its overview"));
  // Its .npy holds every weight: byte for byte the export of the same head from a run that
  // stores its maps (head 1, the head mean and the head maximum).
  for (const std::string head : {"1", "mean", "max"}) {
    INFO("head " << head);
    const fs::path exact = work / ("exact_" + head + ".npy"), stored = work / ("stored_" + head + ".npy");
    const std::string common = "export preset:tiny-rope --text-file " + (work / "t.txt").string() +
                               " --view heatmap --layer 1 --head " + head;
    Output on_demand = atlas_cli(common + " --maps on-demand --out " + exact.string());
    Output kept = atlas_cli(common + " --maps stored --out " + stored.string());
    REQUIRE(on_demand.code == 0);
    REQUIRE(kept.code == 0);
    CHECK_THAT(on_demand.err, !Catch::Contains("overview"));
    const std::string a = read_all(exact), b = read_all(stored);
    CHECK_THAT(a, Catch::Contains("'shape': (2100, 2100)"));
    CHECK(a.size() > 2100u * 2100u * 4u);
    CHECK(a == b);
  }
  fs::remove_all(work);
}
