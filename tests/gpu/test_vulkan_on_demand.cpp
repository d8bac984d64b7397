// Maps computed on request from a Vulkan run (core/model/attention_on_demand.h): the run traces
// its queries and keys on the device, the maps are computed from them by the CPU routine, and
// they match the CPU run's stored maps (the two backends round differently, so within 1e-4);
// typing through the prefix cache on Vulkan gives the full run's queries and keys.
#include "tests/gpu/gpu_test_util.h"

#include "core/model/attention_on_demand.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/prefix_cache.h"
#include "core/model/presets.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

std::string text_of(size_t n) {
  std::string t;
  while (t.size() < n) t += "attention is all you need. ";
  return t.substr(0, n);
}

}  // namespace

TEST_CASE("on-demand maps of a Vulkan run match the CPU's stored maps", "[vulkan][on-demand]") {
  Gpu g;
  for (const char* preset : {"tiny-llama", "tiny-mistral"}) {
    INFO(preset);
    const ModelConfig c = preset_config(preset);
    const Model model(c, init_params(c, 9));
    RunOptions cpu;
    cpu.trace.maps = MapStorage::Stored;
    const RunResult want = model.run(text_of(150), "", cpu);
    RunOptions vk;
    vk.backend = g.vk.get();
    vk.trace.maps = MapStorage::OnDemand;
    const RunResult got = model.run(text_of(150), "", vk);
    REQUIRE(got.trace.attention_maps.size() == want.trace.attention_maps.size());
    for (const AttentionMap& w : want.trace.attention_maps) {
      INFO(w.array);
      const AttentionMap* m = got.trace.attention_map(w.array);
      REQUIRE(m);
      REQUIRE(m->on_demand);
      const OnDemandMap od(got.trace, *m);
      const Tensor& dense = want.trace.find(w.array)->tensor;
      const int64_t L = w.queries.count;
      double worst = 0;
      for (int64_t h = 0; h < w.heads; ++h) {
        const std::vector<float> rows = od.rows(h, 0, L);
        for (int64_t t = 0; t < L * L; ++t)
          worst = std::max(worst, double(std::abs(rows[size_t(t)] - dense.data[size_t(h * L * L + t)])));
      }
      CHECK(worst < 1e-4);
    }
  }
}

TEST_CASE("typing on Vulkan with maps on request splices the queries and keys of a full run",
          "[vulkan][on-demand][prefix_cache]") {
  Gpu g;
  const ModelConfig c = preset_config("tiny-llama");
  const Model model(c, init_params(c, 9));
  PrefixCache cache;
  RunOptions typing;
  typing.backend = g.vk.get();
  typing.trace.maps = MapStorage::OnDemand;
  typing.prefix_cache = &cache;
  model.run(text_of(140), "", typing);
  const RunResult got = model.run(text_of(143), "", typing);
  CHECK(cache.reused_tokens() >= 139);
  RunOptions full = typing;
  full.prefix_cache = nullptr;
  const RunResult want = model.run(text_of(143), "", full);
  REQUIRE(got.trace.names() == want.trace.names());
  for (const TracedArray& w : want.trace.arrays) {
    INFO(w.name);
    const TracedArray* a = got.trace.find(w.name);
    REQUIRE(a);
    REQUIRE(a->tensor.shape == w.tensor.shape);
    double worst = 0, magnitude = 1;
    for (size_t i = 0; i < w.tensor.data.size(); ++i) {
      worst = std::max(worst, double(std::abs(a->tensor.data[i] - w.tensor.data[i])));
      magnitude = std::max(magnitude, double(std::abs(w.tensor.data[i])));
    }
    CHECK(worst < 1e-4 * magnitude);
  }
  REQUIRE(got.trace.attention_maps.size() == want.trace.attention_maps.size());
  for (size_t i = 0; i < got.trace.attention_maps.size(); ++i) {
    const AttentionMap &m = got.trace.attention_maps[i], &w = want.trace.attention_maps[i];
    CHECK(m.on_demand);
    CHECK(m.causal_offset == w.causal_offset);
    CHECK(m.queries.count == w.queries.count);
    CHECK(m.keys.count == w.keys.count);
  }
}
