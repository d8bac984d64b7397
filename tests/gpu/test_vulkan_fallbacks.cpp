// Visible fallbacks: variant attention that core/ computes on the host must be reported by the
// Vulkan backend (fallbacks(), once per op kind), by `atlas info --backend vulkan` before any
// run and by `atlas run --backend vulkan` on stderr; a vanilla model reports nothing.
#include "tests/gpu/gpu_test_util.h"

#include "tests/app/cli_runner.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

std::vector<std::string> fallbacks_after_run(Backend& be, const std::string& preset) {
  const ModelConfig c = preset_config(preset);
  Model model(c, init_params(c, 3));
  RunOptions o;
  o.backend = &be;
  o.trace.scores = true;
  const std::string target = c.architecture == Architecture::EncoderDecoder ? "ok" : "";
  model.run("Relative positions.", target, o);
  model.run("A second run of the same model.", target, o);
  return be.fallbacks();
}

// The op-kind prefix of each line ("lsh_attention: ..." -> "lsh_attention").
std::vector<std::string> kinds(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) out.push_back(l.substr(0, l.find(':')));
  return out;
}

}  // namespace

TEST_CASE("variant attention computed on the host is listed once per op kind on Vulkan",
          "[vulkan][fallback]") {
  // Hand-written expectations: which host computation each preset's forward performs.
  const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"tiny-encoder", {}},
      {"tiny-encoder-decoder", {}},
      {"tiny-ut-fixed", {}},  // a fixed-step Universal Transformer is plain layers
      {"tiny-shaw", {}},      // Shaw and adaptive span have a kernel (relative_attention.comp)
      {"tiny-span", {}},
      {"tiny-span-dynamic", {}},
      {"tiny-xl", {}},  // XL terms and memory have kernels (xl_attention.comp, buffer copies)
      {"tiny-sparse-strided", {}},  // CSR patterns have a kernel (sparse_attention.comp)
      {"tiny-local1d", {}},
      {"tiny-reformer", {"lsh_attention"}},
      {"tiny-performer", {}},       // FAVOR+ has a kernel (performer.comp)
      {"tiny-ut-act", {}},          // the ACT step has a kernel (gpu/variants/universal)
      {"tiny-gtrxl", {}},           // GTrXL gates have a kernel (gtrxl_gate.comp)
      {"tiny-score-additive", {}},  // score functions have a kernel (score_attention.comp)
  };
  for (const auto& [preset, want] : table) {
    INFO("preset " << preset);
    Gpu g;
    const std::vector<std::string> got = fallbacks_after_run(*g.vk, preset);
    CHECK(kinds(got) == want);  // two runs, several layers: still one line per kind
    for (const auto& line : got) CHECK(line.find("on the host") != std::string::npos);
  }
}

TEST_CASE("the CPU backend reports no fallback for variant attention", "[vulkan][fallback]") {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  CHECK(fallbacks_after_run(*cpu, "tiny-shaw").empty());
  CHECK(fallbacks_after_run(*cpu, "tiny-performer").empty());
  CHECK(fallbacks_after_run(*cpu, "tiny-xl").empty());
}

TEST_CASE("atlas info and atlas run name the host fallbacks of a Vulkan run",
          "[vulkan][fallback][cli]") {
  using atlas_test::run_atlas;
  const auto info_lsh = run_atlas("info preset:tiny-reformer --length 16 --backend vulkan");
  REQUIRE(info_lsh.code == 0);
  CHECK(info_lsh.out.find("CPU fallback: lsh_attention:") != std::string::npos);
  const auto info_shaw = run_atlas("info preset:tiny-shaw --length 16 --backend vulkan");
  REQUIRE(info_shaw.code == 0);
  CHECK(info_shaw.out.find("CPU fallback") == std::string::npos);  // runs on the device
  const auto info_vanilla = run_atlas("info preset:tiny-encoder --length 16 --backend vulkan");
  REQUIRE(info_vanilla.code == 0);
  CHECK(info_vanilla.out.find("CPU fallback") == std::string::npos);
  const auto info_xl = run_atlas("info preset:tiny-xl --length 16 --backend vulkan");
  REQUIRE(info_xl.code == 0);
  CHECK(info_xl.out.find("CPU fallback") == std::string::npos);
  const auto info_cpu = run_atlas("info preset:tiny-reformer --length 16 --backend cpu");
  CHECK(info_cpu.out.find("CPU fallback") == std::string::npos);

  const auto run_lsh = run_atlas("run preset:tiny-reformer --text \"abc def\" --backend vulkan");
  REQUIRE(run_lsh.code == 0);
  const std::string note = "atlas: vulkan: lsh_attention:";
  const size_t at = run_lsh.err.find(note);
  CHECK(at != std::string::npos);
  CHECK(run_lsh.err.find(note, at + 1) == std::string::npos);  // logged once, not per layer
  const auto run_shaw = run_atlas("run preset:tiny-shaw --text \"abc def\" --backend vulkan");
  REQUIRE(run_shaw.code == 0);
  CHECK(run_shaw.err.find("atlas: vulkan:") == std::string::npos);
  const auto run_vanilla = run_atlas("run preset:tiny-encoder --text \"abc def\" --backend vulkan");
  REQUIRE(run_vanilla.code == 0);
  CHECK(run_vanilla.err.find("atlas: vulkan:") == std::string::npos);
}
