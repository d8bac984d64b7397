// The incremental forward (core/model/prefix_cache.h) on Vulkan: the cached keys and values are
// device buffers, sliced and extended by the vk_rows copies; the result equals the CPU backend's
// full forward, with no host fallback.
#include "core/model/model.h"
#include "core/model/prefix_cache.h"
#include "core/model/presets.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

TEST_CASE("Vulkan incremental forward equals the CPU full forward", "[vulkan][prefix_cache]") {
  Gpu g;
  for (const char* preset : {"tiny-decoder", "tiny-llama", "tiny-mistral"}) {
    INFO(preset);
    const ModelConfig c = preset_config(preset);
    const Model model(c, init_params(c, c.seed));
    PrefixCache cache;
    RunOptions o;
    o.backend = g.vk.get();
    o.prefix_cache = &cache;
    model.run("keys kept on the device", "", o);
    for (const char* text : {"keys kept on the device!", "keys kept on the dev"}) {
      const RunResult got = model.run(text, "", o);
      CHECK(cache.reused_tokens() >= 19);
      const RunResult want = model.run(text, "", RunOptions{});
      require_close(got.output.data, std::vector<double>(want.output.data.begin(), want.output.data.end()),
                    1e-3, std::string(preset) + " logits");
      for (const TracedArray& w : want.trace.arrays) {
        const TracedArray* a = got.trace.find(w.name);
        REQUIRE(a);
        REQUIRE(a->tensor.shape == w.tensor.shape);
        if (w.name.find(".scores") != std::string::npos) continue;  // -inf: compared on CPU tests
        require_close(a->tensor.data, std::vector<double>(w.tensor.data.begin(), w.tensor.data.end()),
                      1e-3, std::string(preset) + " " + w.name);
      }
    }
    CHECK(g.vk->fallbacks().empty());
  }
}
