// Whole models on both backends: for every preset, the Vulkan run must match the CPU run in
// its output and in every traced array (attention probabilities, variant records). Presets
// bigger than a few million parameters are shrunk to d 64 / 2 layers with every other option
// kept, so each composition is covered without uploading paper-sized weights to lavapipe.
#include "tests/gpu/gpu_test_util.h"
#include "tests/core/preset_test_util.h"

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/input/patch_input.h"
#include "core/model/presets.h"

using namespace atlas;
using namespace atlas::gpu_test;

using preset_test::small_preset_config;

TEST_CASE("every preset gives the same outputs and traces on Vulkan as on the CPU", "[vulkan][model]") {
  Gpu g;
  for (const PresetInfo& info : list_presets()) {
    const ModelConfig c = small_preset_config(info.name);
    INFO("preset " << info.name);
    // Seed 004's non-Transformer models (recurrent seq2seq, NTM, SAGAN, SNAIL) have no backend ops: they
    // run on the host and say so (checked in the next test case).
    if (c.rnn_seq2seq() || c.ntm() || c.sagan() || c.snail()) continue;
    Model model(c, init_params(c, 5));
    // A ViT reads an image: its patches of a colour gradient.
    auto run = [&](const RunOptions& o) {
      return preset_test::run_preset_input(model, "Attention is all you need.", o);
    };
    RunOptions cpu_options;
    RunResult want = run(cpu_options);
    RunOptions vk_options;
    vk_options.backend = g.vk.get();
    const uint64_t submissions_before = g.vk->submission_count();
    RunResult got = run(vk_options);
    CHECK(g.vk->submission_count() > submissions_before);  // the run really went through Vulkan

    REQUIRE(got.output.shape == want.output.shape);
    double scale = 1.0;
    for (float v : want.output.data) scale = std::max(scale, double(std::abs(v)));
    double worst = 0;
    for (size_t i = 0; i < want.output.data.size(); ++i)
      worst = std::max(worst, double(std::abs(got.output.data[i] - want.output.data[i])));
    CHECK(worst <= 2e-3 * scale);

    REQUIRE(got.trace.names() == want.trace.names());
    for (size_t a = 0; a < want.trace.arrays.size(); ++a) {
      const Tensor& w = want.trace.arrays[a].tensor;
      const Tensor& v = got.trace.arrays[a].tensor;
      INFO("array " << want.trace.arrays[a].name);
      REQUIRE(v.shape == w.shape);
      double err = 0, mag = 1.0;
      for (size_t i = 0; i < w.data.size(); ++i) {
        if (std::isinf(w.data[i]) || std::isinf(v.data[i])) {  // masked scores: -inf on both
          CHECK(w.data[i] == v.data[i]);
          continue;
        }
        mag = std::max(mag, double(std::abs(w.data[i])));
        err = std::max(err, double(std::abs(v.data[i] - w.data[i])));
      }
      CHECK(err <= 2e-3 * mag);
    }
  }
  for (const auto& f : g.vk->fallbacks()) {  // Shaw and adaptive span run on the device
    CHECK(f.rfind("relative_attention", 0) != 0);
    CHECK(f.rfind("sparse_attention", 0) != 0);  // and so do the CSR patterns
  }
}

TEST_CASE("host-only models report themselves as a fallback on Vulkan", "[vulkan][model]") {
  for (const char* preset : {"seq2seq-gru-bahdanau", "ntm-small", "sagan-small", "snail-small"}) {
    INFO("preset " << preset);
    Gpu g;
    const ModelConfig c = preset_config(preset);
    Model model(c, init_params(c, 5));
    RunOptions options;
    options.backend = g.vk.get();
    const std::string target = c.rnn_seq2seq() ? "the cat" : "";
    RunResult want = model.run("the cat sat", target, RunOptions{});
    RunResult got = model.run("the cat sat", target, options);
    CHECK(got.output.data == want.output.data);  // same host maths, bit for bit
    bool reported = false;
    for (const auto& f : g.vk->fallbacks()) reported = reported || f.rfind("host_model", 0) == 0;
    CHECK(reported);
  }
}

TEST_CASE("a traced vanilla forward is one queue submission on Vulkan", "[vulkan][model]") {
  Gpu g;
  {
    const ModelConfig c = small_preset_config("vanilla-base");  // encoder-decoder, shrunk
    Model model(c, init_params(c, 5));
    RunOptions o;
    o.backend = g.vk.get();
    o.trace = TraceOptions::all();
    model.run("warm", "up", o);  // uploads the weights (their own submissions)
    const uint64_t before = g.vk->submission_count();
    RunResult r = model.run("Attention is all you need.", "Yes", o);
    // Every traced array is downloaded after a single submission of the whole forward.
    CHECK(g.vk->submission_count() - before == 1);
    CHECK(r.trace.find("decoder.layer1.cross_attn")->tensor.shape == Shape{4, 4, 26});
  }
}

TEST_CASE("a Transformer-XL forward over several segments is one queue submission on Vulkan",
          "[vulkan][model][xl]") {
  for (const char* preset : {"tiny-xl", "tiny-gtrxl"}) {
    INFO("preset " << preset);
    Gpu g;
    const ModelConfig c = preset_config(preset);
    Model model(c, init_params(c, 5));
    RunOptions o;
    o.backend = g.vk.get();
    o.trace = TraceOptions::all();
    model.run("warm up", "", o);
    const std::string text(size_t(3 * c.xl()->segment_length + 5), 'a');  // four segments
    const uint64_t before = g.vk->submission_count();
    RunResult r = model.run(text, "", o);
    // Memory slicing and stacking are device copies, the terms and the gates kernels: nothing
    // is read back between segments, so all traced arrays come down with one submission.
    CHECK(g.vk->submission_count() - before == 1);
    CHECK(g.vk->fallbacks().empty());
    CHECK(r.trace.find("decoder.seg3.layer0.self_attn") != nullptr);
  }
}

TEST_CASE("a Universal Transformer with ACT submits once per ponder step on Vulkan",
          "[vulkan][model][act]") {
  Gpu g;
  const ModelConfig c = preset_config("tiny-ut-act");
  Model model(c, init_params(c, 5));
  RunOptions o;
  o.backend = g.vk.get();
  o.trace = TraceOptions::all();
  model.run("warm", "", o);
  const uint64_t before = g.vk->submission_count();
  RunResult r = model.run("Pondering takes a few steps.", "", o);
  // One read of the [L, 4] halting state per step decides whether to go on; then the final
  // halting state and the deferred trace arrays.
  const int64_t steps_run = r.trace.find("act.halting")->tensor.shape[0];
  CHECK(steps_run <= c.universal()->max_steps);
  CHECK(g.vk->submission_count() - before == uint64_t(steps_run) + 2);
  CHECK(g.vk->fallbacks().empty());
}
