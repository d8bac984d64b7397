// Incremental forward for causal models (core/model/prefix_cache.h): a run that
// continues the previous run's tokens computes only the new ones, and its output and every
// traced array equal a full forward of the same text (the oracle: the same model run without a
// cache). Edits at the end, in the middle, deletions, repeated labels, BPE merges that change the
// last token, and model switches.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "core/formats/model_io.h"
#include "core/model/model.h"
#include "core/model/prefix_cache.h"
#include "core/model/presets.h"
#include "tests/core/hf_test_util.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;
using namespace hf_test;

namespace {

// Every traced array and the output, value by value (masked scores are -inf in both).
void require_same_result(const RunResult& got, const RunResult& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.trace.source_tokens.size() == want.trace.source_tokens.size());
  REQUIRE(got.trace.names() == want.trace.names());
  REQUIRE(got.output.shape == want.output.shape);
  auto close = [](float a, float b) {
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::fabs(a - b) <= 2e-5f * std::max(1.0f, std::fabs(b));
  };
  for (size_t i = 0; i < want.output.data.size(); ++i)
    if (!close(got.output.data[i], want.output.data[i])) FAIL("output differs at " << i);
  for (const TracedArray& w : want.trace.arrays) {
    const TracedArray* g = got.trace.find(w.name);
    INFO(w.name);
    REQUIRE(g);
    REQUIRE(g->tensor.shape == w.tensor.shape);
    size_t bad = 0;
    for (size_t i = 0; i < w.tensor.data.size(); ++i) bad += !close(g->tensor.data[i], w.tensor.data[i]);
    CHECK(bad == 0);
  }
  REQUIRE(got.trace.attention_maps.size() == want.trace.attention_maps.size());
  for (size_t i = 0; i < want.trace.attention_maps.size(); ++i) {
    CHECK(got.trace.attention_maps[i].array == want.trace.attention_maps[i].array);
    CHECK(got.trace.attention_maps[i].queries.count == want.trace.attention_maps[i].queries.count);
    CHECK(got.trace.attention_maps[i].keys.count == want.trace.attention_maps[i].keys.count);
    CHECK(got.trace.attention_maps[i].on_demand == want.trace.attention_maps[i].on_demand);
    CHECK(got.trace.attention_maps[i].causal_offset == want.trace.attention_maps[i].causal_offset);
    CHECK(got.trace.attention_maps[i].window == want.trace.attention_maps[i].window);
  }
}

struct Edit {
  std::string text;
  int64_t min_reused;  // at least this many leading tokens must come from the cache
};

// Runs the edits through one cache and checks each against a full forward.
void check_edits(const Model& model, const std::vector<Edit>& edits, const TraceOptions& trace,
                 const std::string& what) {
  PrefixCache cache;
  RunOptions cached;
  cached.trace = trace;
  cached.prefix_cache = &cache;
  RunOptions full;
  full.trace = trace;
  for (const Edit& e : edits) {
    const RunResult got = model.run(e.text, "", cached);
    CHECK(cache.reused_tokens() >= e.min_reused);
    CHECK(cache.reused_tokens() < static_cast<int64_t>(got.trace.source_tokens.size()));
    require_same_result(got, model.run(e.text, "", full), what + " \"" + e.text + "\"");
  }
}

const std::vector<Edit> kTyping = {
    {"the cat sat", 0},
    {"the cat sat on", 10},   // appended: one token per byte in the byte-level presets
    {"the cat sat o", 12},    // backspace: a prefix of the cached tokens
    {"the cat sat o", 12},    // the same text again: the last token is recomputed
    {"the dog sat o", 4},     // an edit in the middle: only "the " is shared
    {"a a a a a a a", 0},     // repeated labels
    {"a a a a a a a a", 12},
};

}  // namespace

TEST_CASE("Incremental forward equals a full forward on every causal preset", "[prefix_cache]") {
  int covered = 0;
  for (const PresetInfo& info : list_presets()) {
    ModelConfig c = preset_test::small_preset_config(info.name);
    RunOptions probe;
    if (!incremental_forward_applies(c, probe) || c.tokenizer.kind != TokenizerKind::Bytes) continue;
    const Model model(c, init_params(c, 7));
    check_edits(model, kTyping, TraceOptions::all(), info.name);
    check_edits(model, {{"the cat sat", 0}, {"the cat sat on", 10}}, TraceOptions{}, info.name);
    // Maps computed on request: the spliced queries and keys are a full run's, so are its maps.
    TraceOptions on_demand;
    on_demand.maps = MapStorage::OnDemand;
    check_edits(model, kTyping, on_demand, info.name + " (maps on request)");
    ++covered;
  }
  // tiny-decoder, tiny-rope, tiny-llama (grouped heads), tiny-mistral (sliding window), GPT-2
  // and Llama shapes...: the list grows with the presets, never below these.
  CHECK(covered >= 5);
}

TEST_CASE("Incremental forward on a GPT-2 checkpoint whose BPE merges change the last token",
          "[prefix_cache][hf]") {
  const fs::path dir = tiny_gpt2_dir("prefix-cache");
  const Model model = load_model(dir.string());
  // " t" -> "Ġt"; " th" -> "Ġt" "h"; " the" -> "Ġthe": the last token changes as one types
  // (max_positions is 6).
  check_edits(model,
              {{"a t", 0}, {"a th", 2}, {"a the", 1}, {"a the e", 2}},
              TraceOptions::all(), "gpt2");
  fs::remove_all(dir);
}

TEST_CASE("The prefix cache is not reused across models, trace options or non-causal variants",
          "[prefix_cache]") {
  const ModelConfig c = preset_test::small_preset_config("tiny-decoder");
  const Model a(c, init_params(c, 1)), b(c, init_params(c, 2));
  PrefixCache cache;
  RunOptions o;
  o.prefix_cache = &cache;
  a.run("the cat sat", "", o);
  const RunResult on_b = b.run("the cat sat on", "", o);  // same shapes, other weights
  CHECK(cache.reused_tokens() == 0);
  RunOptions full;
  require_same_result(on_b, b.run("the cat sat on", "", full), "model switch");

  b.run("the cat sat on", "", o);
  CHECK(cache.reused_tokens() > 0);
  o.trace.scores = true;  // other arrays wanted: a full run
  b.run("the cat sat on", "", o);
  CHECK(cache.reused_tokens() == 0);

  // An encoder-decoder and a Transformer-XL decoder run in full.
  for (const char* name : {"tiny-encoder-decoder", "tiny-xl"}) {
    const ModelConfig v = preset_test::small_preset_config(name);
    CHECK_FALSE(incremental_forward_applies(v, RunOptions{}));
  }
  RunOptions qk;
  qk.trace.qk = true;
  CHECK_FALSE(incremental_forward_applies(c, qk));
}
