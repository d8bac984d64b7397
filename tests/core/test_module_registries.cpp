// The stack-kind and attention-mechanism registries (core/model/stack_kind_module.h,
// core/model/mechanism_module.h), generated from the variant folders. Oracles: the config's own
// names of its stack kind (stack_kind_name, core/config/stack_kind.cpp) and the mechanisms each
// preset is documented to use, written out here; `atlas info`'s line order as it was written
// before the registries.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config/config.h"
#include "core/model/estimate.h"
#include "core/model/mechanism_module.h"
#include "core/model/presets.h"
#include "core/model/stack_kind_module.h"

using namespace atlas;

namespace {

std::vector<std::string> mechanism_names(const ModelConfig& c) {
  std::vector<std::string> names;
  for (const AttentionMechanismModule* m : mechanisms_for(c)) names.push_back(m->name);
  return names;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("every preset's stack kind has its registry entry, none for the standard stacks",
          "[registry][stack]") {
  int kinds = 0;
  for (const PresetInfo& p : list_presets()) {
    const ModelConfig c = preset_config(p.name);
    const StackKindModule* k = stack_kind_module(c);
    INFO(p.name);
    if (c.standard_stack()) {
      CHECK(k == nullptr);
      continue;
    }
    REQUIRE(k != nullptr);
    CHECK(std::string(k->name) == stack_kind_name(c.stack));
    ++kinds;
  }
  CHECK(kinds >= 7);  // universal, xl, reversible, rnn_seq2seq, ntm, sagan, snail among the presets
  // The host models are the ones the backend ops call HostModel.
  CHECK(host_model_kind(preset_config("ntm-small")) != nullptr);
  CHECK(host_model_kind(preset_config("tiny-ut-act")) == nullptr);
  CHECK(stack_route(preset_config("tiny-xl")) == StackRoute::Xl);
  CHECK(stack_route(preset_config("tiny-decoder")) == StackRoute::Decoder);
}

TEST_CASE("the mechanisms a preset uses come from the registry by name", "[registry][mechanism]") {
  const std::vector<std::pair<const char*, std::vector<std::string>>> expected = {
      {"tiny-decoder", {}},
      {"tiny-sparse-fixed", {"sparse"}},
      {"tiny-reformer", {"lsh"}},
      {"tiny-performer", {"performer"}},
      {"tiny-shaw", {"shaw"}},
      {"tiny-span", {"adaptive_span"}},
      {"tiny-score-additive", {"score_function"}},
  };
  for (const auto& [preset, names] : expected) {
    INFO(preset);
    CHECK(mechanism_names(preset_config(preset)) == names);
  }
}

TEST_CASE("atlas info writes a score function's line once, before a host model's own lines",
          "[registry][estimate]") {
  ModelConfig ntm = preset_config("ntm-small");
  ntm.attention_kind = ScoreConfig{ScoreFunction::Additive};
  const std::string text = describe_architecture(ntm);
  CHECK(count_of(text, "score function: ") == 1);
  REQUIRE(text.find("Neural Turing Machine: ") != std::string::npos);
  CHECK(text.find("score function: ") < text.find("Neural Turing Machine: "));
  CHECK(text.find("d_model: ") == std::string::npos);  // no Transformer lines for a host model

  // The seq2seq always has a score function: one line whether or not the config names it, after
  // the model's own lines.
  const ModelConfig named = preset_config("seq2seq-gru-bahdanau");  // "score": additive
  REQUIRE(named.score());
  ModelConfig unnamed = named;
  unnamed.attention_kind = SoftmaxAttention{};
  CHECK_THAT(describe_architecture(named), Catch::Contains("score function: additive\n"));
  CHECK_THAT(describe_architecture(unnamed), Catch::Contains("score function: scaled_dot\n"));
  for (const ModelConfig& c : {named, unnamed}) {
    const std::string s = describe_architecture(c);
    CHECK(count_of(s, "score function: ") == 1);
    CHECK(s.find("recurrent seq2seq") < s.find("score function: "));
  }
}
