// The rule both forwards dispatch on (core/model/attention_mechanism.h), against the papers'
// statements of where each mechanism acts: Shaw's relations and the adaptive span modify
// self-attention (Shaw et al. 2018 §3, Sukhbaatar et al. 2019 §3), the sparse patterns, LSH
// and Performer replace self-attention (Child et al. 2019, Kitaev et al. 2020, Choromanski et
// al. 2021), and a score function (seed 004) scores every attention, cross-attention too.
#include <catch2/catch.hpp>

#include "core/model/attention_mechanism.h"

using namespace atlas;

TEST_CASE(
    "each attention kind acts where its paper says: self-attention, or every attention "
    "for a score function",
    "[attention-mechanism]") {
  using M = AttentionMechanism;
  struct Row {
    const char* what;
    AttentionKind kind;
    M self, cross;
  };
  const Row rows[] = {
      {"scaled dot", SoftmaxAttention{}, M::Softmax, M::Softmax},
      {"Shaw", SoftmaxAttention{.shaw = ShawConfig{}}, M::Relative, M::Softmax},
      {"adaptive span", SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}}, M::Relative,
       M::Softmax},
      {"strided pattern", SparseConfig{.pattern = SparsePattern::Strided}, M::SparsePattern,
       M::Softmax},
      {"LSH", LshConfig{}, M::Lsh, M::Softmax},
      {"Performer", PerformerConfig{}, M::Performer, M::Softmax},
      {"additive score", ScoreConfig{.function = ScoreFunction::Additive}, M::ScoreFunction,
       M::ScoreFunction},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    ModelConfig c;
    c.attention_kind = r.kind;
    CHECK(attention_mechanism(c, true) == r.self);
    CHECK(attention_mechanism(c, false) == r.cross);
  }
  CHECK(is_sparse_mechanism(M::SparsePattern));
  CHECK(is_sparse_mechanism(M::Lsh));
  CHECK(is_sparse_mechanism(M::Performer));
  CHECK_FALSE(is_sparse_mechanism(M::Relative));
  CHECK_FALSE(is_sparse_mechanism(M::ScoreFunction));
}
