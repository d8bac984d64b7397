// Vulkan kernels of the Llama-family block (rms_norm.comp, mul.comp, repeat_heads.comp, SiLU in
// activation.comp) against naive double-precision loops written here, at odd sizes, and a
// Llama-layout model on Vulkan. Inputs in [-1, 1]. The same ops on every backend against their
// host references, and the sliding window as the attention mask, are cases of the backend-ops
// harness (test_backend_ops.cpp).
#include "core/model/model.h"
#include "core/model/presets.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

TEST_CASE("Vulkan rms_norm, mul, SiLU and repeat_heads match naive loops", "[vulkan][llama]") {
  Gpu g;
  const Tensor x = random_tensor({37, 45}, 1), w = random_tensor({45}, 2), y = random_tensor({37, 45}, 3);
  SECTION("rms_norm: x / sqrt(mean x^2 + eps) * w") {
    std::vector<double> want(x.data.size());
    for (int64_t r = 0; r < 37; ++r) {
      double ms = 0;
      for (int64_t k = 0; k < 45; ++k) ms += double(x.data[size_t(r * 45 + k)]) * x.data[size_t(r * 45 + k)];
      const double inv = 1 / std::sqrt(ms / 45 + 1e-6);
      for (int64_t k = 0; k < 45; ++k) want[size_t(r * 45 + k)] = x.data[size_t(r * 45 + k)] * inv * w.data[size_t(k)];
    }
    const Tensor got = g.vk->download(g.vk->rms_norm(g.vk->upload(x), g.vk->upload(w), 1e-6f));
    require_close(got.data, want, rel_tol(want, 1e-6, 1e-5), "rms_norm vs naive");
  }
  SECTION("mul and SiLU") {
    std::vector<double> prod(x.data.size()), silu(x.data.size());
    for (size_t i = 0; i < x.data.size(); ++i) {
      prod[i] = double(x.data[i]) * y.data[i];
      silu[i] = x.data[i] / (1 + std::exp(-double(x.data[i])));
    }
    require_close(g.vk->download(g.vk->mul(g.vk->upload(x), g.vk->upload(y))).data, prod, kU, "mul");
    require_close(g.vk->download(g.vk->activation(g.vk->upload(x), Activation::Silu)).data, silu,
                  rel_tol(silu, 1e-7, 1e-6), "silu");
  }
  SECTION("repeat_heads: 3 key/value heads of 15 serve 12 query heads") {
    const Tensor got = g.vk->download(g.vk->repeat_heads(g.vk->upload(x), 4, 15));
    REQUIRE(got.shape == Shape{37, 180});
    std::vector<double> want(size_t(37 * 180));
    for (int64_t l = 0; l < 37; ++l)
      for (int64_t h = 0; h < 12; ++h)
        for (int64_t k = 0; k < 15; ++k)
          want[size_t(l * 180 + h * 15 + k)] = x.data[size_t(l * 45 + (h / 4) * 15 + k)];
    require_close(got.data, want, 0.0, "repeat_heads");
  }
  CHECK(g.vk->fallbacks().empty());
}

TEST_CASE("a Llama-layout model runs on Vulkan with no host fallback", "[vulkan][llama]") {
  Gpu g;
  for (const char* preset : {"tiny-llama", "tiny-mistral"}) {
    const ModelConfig c = preset_config(preset);
    Model model(c, init_params(c, c.seed));
    RunOptions o;
    o.backend = g.vk.get();
    const RunResult got = model.run("grouped heads on the GPU", "", o);
    const RunResult want = model.run("grouped heads on the GPU", "", RunOptions{});
    INFO(preset);
    CHECK(g.vk->fallbacks().empty());  // RoPE, repeat_heads, RMSNorm, SiLU, mul: all kernels
    require_close(got.output.data, std::vector<double>(want.output.data.begin(), want.output.data.end()),
                  1e-3, std::string(preset) + " logits");
  }
}
