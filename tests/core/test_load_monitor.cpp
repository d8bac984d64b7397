// A monitored model load (core/model/load_monitor.h): the progress it reports over a GGUF file, a
// preset and our own safetensors folder, and cancellation at any of its steps. The oracle is the
// file's own tensor table: one "Checking weights" step per parameter, fractions that never go
// back and stay in [0, 1], and a cancel that stops the load with Cancelled, not a half model.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/model_io.h"
#include "core/model/load_monitor.h"
#include "core/tensor/error.h"
#include "tests/core/gguf_model_writer.h"
#include "tests/core/temp_dir.h"

using namespace atlas;

namespace {

struct Recorded {
  std::vector<std::pair<double, std::string>> steps;
  LoadMonitor monitor() {
    LoadMonitor m;
    m.progress = [this](double f, const std::string& stage) { steps.emplace_back(f, stage); };
    return m;
  }
  int count(const std::string& stage) const {
    int n = 0;
    for (const auto& s : steps) n += s.second == stage;
    return n;
  }
  bool monotonic_in_unit_range() const {
    double last = 0;
    for (const auto& [f, stage] : steps) {
      if (f < last || f < 0 || f > 1) return false;
      last = f;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("a monitored GGUF load reports one weight-check step per tensor, in order", "[load-monitor][gguf]") {
  gguf_test::Arch a;
  gguf_test::File f = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(f);
  const std::filesystem::path path = gguf_test::write(f, "monitored");
  Recorded r;
  const LoadMonitor m = r.monitor();
  LoadOptions options;
  options.monitor = &m;
  const Model model = load_model(path.string(), options);
  // The engine's parameter names, one step each before its scan.
  CHECK(r.count("Checking weights") == static_cast<int>(model.params().size()));
  CHECK(r.monotonic_in_unit_range());
  REQUIRE_FALSE(r.steps.empty());
  CHECK(r.steps.front().first == 0.0);
  // Steps weigh tensors by the bytes they hold (a Q8_0 block: 34 bytes for 32 values, a float32
  // vector 4 a value): the last step comes before the last tensor, output.weight, by its share.
  double total = 0;
  for (const auto& [name, t] : model.params())
    total += t.packed ? double(t.packed->rows * t.packed->row_bytes) : 4.0 * double(t.numel());
  const Tensor& out = model.params().rbegin()->second;
  REQUIRE(model.params().rbegin()->first == "output.weight");
  REQUIRE(out.packed);
  CHECK(r.steps.back().first == Approx(1.0 - double(out.packed->rows * out.packed->row_bytes) / total));
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("a cancelled load stops with Cancelled at the step where it was asked", "[load-monitor][gguf]") {
  gguf_test::Arch a;
  gguf_test::File f = gguf_test::make_file(a);
  gguf_test::add_byte_level_tokenizer(f);
  const std::filesystem::path path = gguf_test::write(f, "cancelled");
  for (int at : {0, 1, 5}) {
    std::atomic<bool> stop{at == 0};
    int seen = 0;
    LoadMonitor m;
    m.cancel = &stop;
    m.progress = [&](double, const std::string&) {
      if (++seen == at) stop = true;
    };
    LoadOptions options;
    options.monitor = &m;
    CHECK_THROWS_AS(load_model(path.string(), options), Cancelled);
    // Cancelled before the first report when asked before the load; else at the next step.
    CHECK(seen == (at == 0 ? 0 : at));
  }
  // Nothing about the file is spoiled by a cancelled load: the same file opens.
  CHECK_NOTHROW(load_model(path.string()));
  std::filesystem::remove_all(path.parent_path());
}

TEST_CASE("presets and model folders report their loads too", "[load-monitor]") {
  Recorded preset;
  const LoadMonitor pm = preset.monitor();
  LoadOptions options;
  options.monitor = &pm;
  const Model model = load_model("preset:tiny-decoder", options);
  CHECK(preset.count("Initialising weights") == 1);
  CHECK(preset.count("Checking weights") == static_cast<int>(model.params().size()));
  CHECK(preset.monotonic_in_unit_range());

  const test::TempDir dir;
  save_model(model, (dir.path / "m").string());
  Recorded folder;
  const LoadMonitor fm = folder.monitor();
  options.monitor = &fm;
  const Model again = load_model((dir.path / "m").string(), options);
  CHECK(folder.count("Reading weights") == 1);
  CHECK(folder.count("Checking weights") == static_cast<int>(again.params().size()));
  CHECK(folder.monotonic_in_unit_range());
  // The folder's checks span the second half: reading the float32 file is the first.
  for (const auto& [f, stage] : folder.steps)
    if (stage == "Checking weights") CHECK(f >= 0.5);
}
