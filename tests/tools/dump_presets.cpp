// Dumps every preset's traced run into OUT_DIR/<preset>/ (manifest.json + one .npy per array),
// each preset run as the tests run it (tests/core/preset_test_util.h: shrunk when large, weights
// of seed 3, its own kind of input), and every trained demo's run on its sample into
// OUT_DIR/demo-<name>/, with every optional array traced. Used by
// scripts/compare_preset_dumps.sh to show that a refactoring leaves every output bit-identical.
#include <cstdio>
#include <exception>
#include <string>

#include "core/formats/dump.h"
#include "core/formats/model_io.h"
#include "core/model/demos.h"
#include "core/model/presets.h"
#include "tests/core/preset_test_util.h"

int main(int argc, char** argv) {
  using namespace atlas;
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_presets OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  RunOptions options;
  options.trace = TraceOptions::all();
  options.trace.qk = true;
  options.trace.value_norms = true;
  options.trace.maps = MapStorage::Stored;
  options.threads = 1;
  int failures = 0;
  for (const PresetInfo& info : list_presets()) {
    try {
      const ModelConfig c = preset_test::small_preset_config(info.name);
      const Model model(c, init_params(c, 3));
      const RunResult r = preset_test::run_preset_input(
          model, "The cat sat on the mat. The cat sat again, and again.", options);
      write_dump(out + "/" + info.name, model, r);
      std::printf("%-32s %zu arrays\n", info.name.c_str(), r.trace.arrays.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", info.name.c_str(), e.what());
      ++failures;
    }
  }
  for (const DemoInfo& info : list_demos()) {
    try {
      const Model model = load_model("demo:" + info.name);
      const RunResult r = model.run(info.sample, "", options);
      write_dump(out + "/demo-" + info.name, model, r);
      std::printf("demo-%-27s %zu arrays\n", info.name.c_str(), r.trace.arrays.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "demo %s: %s\n", info.name.c_str(), e.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
