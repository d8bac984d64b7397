// The rule both forwards dispatch on (core/model/attention_mechanism.h), against the papers'
// statements of where each mechanism acts: Shaw's relations and the adaptive span modify
// self-attention (Shaw et al. 2018 §3, Sukhbaatar et al. 2019 §3), the sparse patterns, LSH
// and Performer replace self-attention (Child et al. 2019, Kitaev et al. 2020, Choromanski et
// al. 2021), and a score function (seed 004) scores every attention, cross-attention too.
#include <catch2/catch.hpp>

#include <string>

#include "core/model/attention_mechanism.h"

using namespace atlas;

namespace {

// The registry entry's name of the mechanism computing a sub-layer, "softmax" for none.
std::string mechanism_name(const AttentionMechanismModule* m) { return m ? m->name : "softmax"; }

}  // namespace

TEST_CASE(
    "each attention kind acts where its paper says: self-attention, or every attention "
    "for a score function",
    "[attention-mechanism]") {
  struct Row {
    const char* what;
    AttentionKind kind;
    const char* self;
    const char* cross;
    bool sparse_maps;  // nothing Lq x Lk formed densely (CSR or implicit maps)
  };
  const Row rows[] = {
      {"scaled dot", SoftmaxAttention{}, "softmax", "softmax", false},
      {"Shaw", SoftmaxAttention{.shaw = ShawConfig{}}, "shaw", "softmax", false},
      {"adaptive span", SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}}, "adaptive_span",
       "softmax", false},
      {"strided pattern", SparseConfig{.pattern = SparsePattern::Strided}, "sparse", "softmax",
       true},
      {"LSH", LshConfig{}, "lsh", "softmax", true},
      {"Performer", PerformerConfig{}, "performer", "softmax", true},
      {"additive score", ScoreConfig{.function = ScoreFunction::Additive}, "score_function",
       "score_function", false},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    ModelConfig c;
    c.attention_kind = r.kind;
    const AttentionMechanismModule* self = attention_mechanism(c, true);
    CHECK(mechanism_name(self) == r.self);
    CHECK(mechanism_name(attention_mechanism(c, false)) == r.cross);
    CHECK(is_sparse_mechanism(self) == r.sparse_maps);
    // Every mechanism that claims a sub-layer brings both kernels, for both scalars.
    if (self) {
      CHECK(self->kernel->backend != nullptr);
      CHECK(self->kernel->tape_float != nullptr);
      CHECK(self->kernel->tape_double != nullptr);
    }
  }
}

TEST_CASE("Shaw's relations with the adaptive span run one kernel, the one each runs alone",
          "[attention-mechanism]") {
  ModelConfig shaw, span, both;
  shaw.attention_kind = SoftmaxAttention{.shaw = ShawConfig{}};
  span.attention_kind = SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}};
  both.attention_kind = SoftmaxAttention{.shaw = ShawConfig{}, .adaptive_span = AdaptiveSpanConfig{}};
  const AttentionMechanismModule* m = attention_mechanism(both, true);
  REQUIRE(m != nullptr);
  CHECK(m->kernel == attention_mechanism(shaw, true)->kernel);
  CHECK(m->kernel == attention_mechanism(span, true)->kernel);
  CHECK(attention_mechanism(both, false) == nullptr);
}
