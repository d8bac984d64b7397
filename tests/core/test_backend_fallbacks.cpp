// The Backend default for variant ops: a backend without a kernel still runs a variant model
// (host reference), and says so once per op kind in fallbacks(); the CPU backend never does.
// Also: the model's weight cache drops the weights of a destroyed backend.
#include <catch2/catch.hpp>

#include "core/backend/backend.h"
#include "core/backend/variant_ops.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "tests/core/cpu_forwarding_backend.h"

using namespace atlas;

namespace {

// A "device" backend that forwards every vanilla op to the CPU backend and has no kernel
// for any variant op, like a new backend would before its variant kernels exist.
class VanillaOnlyBackend : public atlas::backend_test::CpuForwardingBackend {
 public:
  std::string name() const override { return "vanilla-only"; }
  bool supports(Op op) const override { return op <= Op::RowNormalize; }
  DTensor upload(const Tensor& h) override {
    DTensor t = cpu_->upload(h);
    uploaded.push_back(t.storage);
    return t;
  }
  std::vector<std::weak_ptr<DeviceStorage>> uploaded;  // every tensor this backend uploaded
};

RunResult run_on(Backend* be, const std::string& preset) {
  const ModelConfig c = preset_config(preset);
  Model model(c, init_params(c, 11));
  RunOptions o;
  o.backend = be;
  model.run("fallbacks are visible", "", o);
  return model.run("and listed once", "", o);
}

}  // namespace

TEST_CASE("a backend without variant kernels reports each host computation once",
          "[backend][fallback]") {
  // Each preset's fallback lines, by their first words, in the order the forward meets them.
  const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"tiny-shaw", {"relative_attention: "}},
      {"tiny-span", {"relative_attention: "}},
      {"tiny-xl", {"xl_attention: "}},
      {"tiny-sparse-fixed", {"sparse_attention: "}},
      {"tiny-reformer", {"lsh_attention: "}},
      {"tiny-performer", {"performer_attention: "}},
      {"tiny-ut-act", {"act_step: "}},
      {"tiny-rope", {"rope: "}},
      {"tiny-gtrxl", {"xl_attention: ", "gtrxl_gate: "}},
      {"tiny-score-additive", {"score_attention: "}},
  };
  for (const auto& [preset, prefixes] : table) {
    INFO("preset " << preset);
    VanillaOnlyBackend be;
    const RunResult got = run_on(&be, preset);
    const std::vector<std::string> fb = be.fallbacks();
    REQUIRE(fb.size() == prefixes.size());
    for (size_t i = 0; i < fb.size(); ++i) CHECK(fb[i].rfind(prefixes[i], 0) == 0);
    // The same host maths as the CPU backend: identical output.
    const RunResult want = run_on(nullptr, preset);
    CHECK(got.output.data == want.output.data);
    // `atlas info` predicts the same lines before any run.
    CHECK(expected_fallbacks(preset_config(preset), be) == fb);
  }
  VanillaOnlyBackend vanilla;
  run_on(&vanilla, "tiny-decoder");
  CHECK(vanilla.fallbacks().empty());
  CHECK(expected_fallbacks(preset_config("tiny-decoder"), vanilla).empty());
}

TEST_CASE("the CPU backend supports every op and lists no fallback", "[backend][fallback]") {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  for (const char* preset :
       {"tiny-shaw", "tiny-xl", "tiny-ut-act", "tiny-gtrxl", "tiny-score-additive"}) {
    CHECK(expected_fallbacks(preset_config(preset), *cpu).empty());
    run_on(cpu.get(), preset);
  }
  CHECK(cpu->fallbacks().empty());
}

TEST_CASE("a model lets go of the weights of a destroyed backend", "[model][cache]") {
  const ModelConfig c = preset_config("tiny-decoder");
  Model model(c, init_params(c, 2));
  RunOptions o;
  auto first = std::make_unique<VanillaOnlyBackend>();
  o.backend = first.get();
  model.run("upload once", "", o);
  const size_t n_params = model.params().size(), after_first = first->uploaded.size();
  REQUIRE(after_first >= n_params);
  // The weights are uploaded first; the rest are per-run inputs (e.g. the sinusoid table).
  const std::vector<std::weak_ptr<DeviceStorage>> weights(first->uploaded.begin(),
                                                          first->uploaded.begin() + long(n_params));
  model.run("and reuse", "", o);
  // The second run uploaded only its per-run inputs again, not the weights.
  CHECK(first->uploaded.size() - after_first == after_first - n_params);
  first.reset();
  size_t alive = 0;
  for (const auto& w : weights) alive += !w.expired();
  CHECK(alive == n_params);  // still cached: nothing ran since
  VanillaOnlyBackend second;
  o.backend = &second;
  model.run("a run on another backend evicts the dead one", "", o);
  alive = 0;
  for (const auto& w : weights) alive += !w.expired();
  CHECK(alive == 0);
}
