// A whole model with ALiBi (core/variants/alibi/) on Vulkan: the alibi_attention kernel
// (gpu/variants/alibi/) runs on the device, without a host fallback, in one submission, and
// gives the CPU backend's logits, probabilities and scores (the kernel itself is compared with
// the host reference shape by shape in tests/backend_ops/alibi_attention_op.cpp). Bounds: the
// per-op bounds of that case grown over two layers of a d 16 model.
#include <cmath>

#include "core/model/model.h"
#include "tests/core/token_lists.h"
#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

double largest_gap(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape == b.shape);
  double worst = 0;
  for (size_t n = 0; n < a.data.size(); ++n) {
    if (std::isinf(a.data[n]) || std::isinf(b.data[n])) {
      CHECK(a.data[n] == b.data[n]);  // both masked
      continue;
    }
    worst = std::max(worst, double(std::abs(a.data[n] - b.data[n])));
  }
  return worst;
}

}  // namespace

TEST_CASE("an ALiBi decoder on Vulkan runs its kernel and matches the CPU backend", "[vulkan][model][alibi]") {
  ModelConfig c;
  c.name = "alibi-vulkan";
  c.architecture = Architecture::Decoder;
  c.vocab_size = 258;
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.max_positions = 128;
  c.positional = Positional::None;
  c.norm_position = NormPosition::Pre;
  c.attention_kind = SoftmaxAttention{};
  c.softmax()->alibi = AlibiConfig{};
  Model model(c, init_params(c, 9));
  std::vector<int32_t> ids;
  for (int32_t n = 0; n < 70; ++n) ids.push_back((n * 37) % 250);  // rows longer than a workgroup

  Gpu g;
  RunOptions cpu;
  cpu.trace.scores = true;
  RunOptions vk = cpu;
  vk.backend = g.vk.get();
  const RunResult want = model.forward(test::tokens(ids), {}, cpu);
  model.forward(test::tokens({1, 2}), {}, vk);  // warm up: pipelines, weights
  const uint64_t before = g.vk->submission_count();
  const RunResult got = model.forward(test::tokens(ids), {}, vk);
  CHECK(g.vk->submission_count() - before == 1);
  CHECK(g.vk->fallbacks().empty());
  CHECK(largest_gap(got.output, want.output) < 2e-4);
  for (const char* layer : {"decoder.layer0.self_attn", "decoder.layer1.self_attn"}) {
    INFO(layer);
    const TracedArray* p = got.trace.find(layer);
    REQUIRE(p != nullptr);
    CHECK(largest_gap(p->tensor, want.trace.find(layer)->tensor) < 2e-5);
    const std::string scores = std::string(layer) + ".scores";
    REQUIRE(got.trace.find(scores) != nullptr);
    CHECK(largest_gap(got.trace.find(scores)->tensor, want.trace.find(scores)->tensor) < 1e-4);
    const std::string bias = std::string(layer) + ".alibi.distance_bias";
    REQUIRE(got.trace.find(bias) != nullptr);
    CHECK(got.trace.find(bias)->tensor.data == want.trace.find(bias)->tensor.data);
  }
}
