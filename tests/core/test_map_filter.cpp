// TraceOptions::only_maps: a run that records only some attention maps keeps exactly those maps,
// their companions and per-map records (`<map>.*`) and every array of no map, each equal to the
// full run's bit for bit; the other maps never reach the trace; a name no map of the run has is
// refused, naming it and the run's maps.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/model/memory_budget.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/tensor/error.h"
#include "tests/core/preset_test_util.h"

using namespace atlas;

namespace {

// The oracle: an array belongs to a map when it is the map or named under it, by the full run's
// catalogue (not by the naming rule the trace uses).
bool kept_by_oracle(const std::string& name, const std::vector<std::string>& all_maps, const std::string& selected) {
  for (const std::string& m : all_maps)
    if (name == m || name.rfind(m + ".", 0) == 0) return m == selected;
  return name != "encoder.rollout";  // built from every map: not with a selection
}

}  // namespace

TEST_CASE("a run with only_maps keeps the selected map, its companions and the arrays of no map, as a full run has them",
          "[trace][only_maps]") {
  const char* presets[] = {"tiny-decoder", "tiny-encoder-decoder", "tiny-xl", "tiny-ut-act", "tiny-sparse-fixed",
                           "tiny-reformer", "tiny-shaw", "tiny-span", "tiny-performer", "tiny-llama", "tiny-vit",
                           "sagan-small", "seq2seq-gru-bahdanau", "snail-small"};
  for (const char* preset : presets) {
    SECTION(preset) {
      const ModelConfig c = preset_test::small_preset_config(preset);
      const Model model(c, init_params(c, 5));
      RunOptions options;
      options.trace.scores = options.trace.qk = options.trace.value_norms = true;
      const RunResult full = preset_test::run_preset_input(model, "abcab cabca", options);
      REQUIRE(!full.trace.attention_maps.empty());
      std::vector<std::string> all_maps;
      for (const AttentionMap& m : full.trace.attention_maps) all_maps.push_back(m.array);
      const AttentionMap& chosen = full.trace.attention_maps[all_maps.size() / 2];
      options.trace.only_maps = {chosen.array};
      const RunResult some = preset_test::run_preset_input(model, "abcab cabca", options);

      size_t expected = 0;
      for (const TracedArray& a : full.trace.arrays) {
        const TracedArray* got = some.trace.find(a.name);
        INFO(a.name);
        if (!kept_by_oracle(a.name, all_maps, chosen.array)) {
          CHECK(got == nullptr);
          continue;
        }
        ++expected;
        REQUIRE(got != nullptr);
        CHECK(got->tensor.shape == a.tensor.shape);
        CHECK(got->tensor.data == a.tensor.data);  // bit for bit (NaN-free: -inf compares equal)
      }
      CHECK(some.trace.arrays.size() == expected);
      CHECK(some.output.data == full.output.data);
      REQUIRE(some.trace.attention_maps.size() == 1);
      const AttentionMap& m = some.trace.attention_maps[0];
      CHECK(m.array == chosen.array);
      CHECK(m.companions == chosen.companions);
      CHECK(m.heads == chosen.heads);
      CHECK(m.dense == chosen.dense);
      CHECK(m.csr == chosen.csr);
    }
  }
}

TEST_CASE("Trace::add with only_maps drops the other maps' arrays and keeps arrays of no map", "[trace][only_maps]") {
  Trace t;
  t.only_maps = {"decoder.layer1.self_attn"};
  const std::vector<std::pair<std::string, bool>> names = {
      {"decoder.layer0.self_attn", false},        {"decoder.layer0.self_attn.q", false},
      {"decoder.layer0.self_attn.round0.buckets", false}, {"decoder.layer1.self_attn", true},
      {"decoder.layer1.self_attn.mask", true},    {"decoder.layer1.self_attn.round1.order", true},
      {"decoder.seg0.layer1.self_attn", false},   {"decoder.step1.self_attn", false},
      {"encoder.layer1.attn", false},             {"decoder.layer1.cross_attn", false},
      {"decoder.layer0.hidden", true},            {"logits", true},
      {"positional", true},                       {"xl.seg0.layer0.terms.a", true},
      {"decoder.layer1.self_attn_extra", true}};
  for (const auto& [name, kept] : names) t.add(name, "", Tensor({1}));
  for (const auto& [name, kept] : names) {
    INFO(name);
    CHECK((t.find(name) != nullptr) == kept);
  }
  // A described map of a name outside the scheme (SAGAN's) is told by its description.
  Trace s;
  s.only_maps = {"sagan.other"};
  AttentionMap m;
  m.array = "sagan.attention";
  s.describe_attention(m);
  s.add("sagan.attention", "", Tensor({1}));
  s.add("sagan.attention.mask", "", Tensor({1}));
  s.add("sagan.gamma", "", Tensor({1}));
  CHECK(s.names() == std::vector<std::string>{"sagan.gamma"});
}

TEST_CASE("only_maps naming no map of the run is refused after the run, naming it and the run's maps",
          "[trace][only_maps][bad-input]") {
  const ModelConfig c = preset_config("tiny-decoder");
  const Model model(c, init_params(c, 5));
  RunOptions options;
  options.trace.only_maps = {"decoder.layer9.self_attn"};
  CHECK_THROWS_WITH(model.run("abc", "", options),
                    "selected map \"decoder.layer9.self_attn\" is not an attention map of this run; its maps: "
                    "decoder.layer0.self_attn, decoder.layer1.self_attn");
  options.trace.only_maps = {"decoder.layer0.self_attn", "decoder.layer1.self_attn.q"};
  CHECK_THROWS_WITH(model.run("abc", "", options),
                    Catch::Contains("\"decoder.layer1.self_attn.q\" is not an attention map of this run (it is a "
                                    "companion of decoder.layer1.self_attn: name the map)"));
}

TEST_CASE("the memory estimate of a run with only_maps counts the selected maps, not every map",
          "[trace][only_maps][memory]") {
  const ModelConfig c = preset_config("base-encoder");  // 6 layers, 8 heads
  const int64_t L = 2048;
  TraceOptions every;
  every.maps = MapStorage::Stored;
  TraceOptions one = every;
  one.only_maps = {"encoder.layer3.attn"};
  const RunMemoryEstimate all = estimate_run_memory(c, L, 0, every);
  const RunMemoryEstimate some = estimate_run_memory(c, L, 0, one);
  // Naive: per layer L x L cells of 8 heads' probabilities and one mask, 4 bytes each.
  const double per_layer = 4.0 * double(L) * double(L) * (8 + 1);
  CHECK(all.attention_maps == Approx(6 * per_layer));
  CHECK(some.attention_maps == Approx(per_layer));
  CHECK(some.activations == all.activations);
  one.only_maps = {"a", "b", "c", "d", "e", "f", "g"};  // never more than every map
  CHECK(estimate_run_memory(c, L, 0, one).attention_maps == all.attention_maps);
}
