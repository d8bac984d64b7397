// Attention dropout and DropHead on every kind of trainable head (core/train/train_model_impl.h
// attention_keep / head_keep / drop_heads, the prob_keep of the variant ops). Oracles:
// linearity of each op in its probabilities (a dropped key equals that key's value row set
// to zero; a uniform multiplier c scales the output by c), and central finite differences of
// whole models with fixed dropout draws.
#include <catch2/catch.hpp>

#include "tests/core/finite_differences.h"
#include "core/model/presets.h"
#include "core/tensor/random.h"
#include "core/train/train_loop.h"
#include "core/variants/score_functions/train_score.h"
#include "core/variants/shaw/train_shaw.h"
#include "core/variants/adaptive_span/train_span.h"
#include "tests/core/train_test_util.h"
#include "core/variants/transformer_xl/train_xl.h"

using namespace atlas;
using namespace atlas::train;
using atlas::train::fd::random_mat;
using fd::check_gradients;
using testing::noisy_params;
using MD = MatT<double>;

namespace {

// One of the variant attention ops on constant inputs: q [lq, H*dh], k, v [lk, H*dh].
using Op = std::function<int(Tape<double>&, int q, int k, int v, const AttentionSpec<double>&)>;

struct OpCase {
  const char* name;
  Eigen::Index lq, lk;
  Op op;
};

// The output of `op` with the given spec and value matrix.
MD run_op(const OpCase& c, const MD& Q, const MD& K, const MD& V, const AttentionSpec<double>& spec) {
  Tape<double> t;
  return t.value(c.op(t, t.constant(Q), t.constant(K), t.constant(V), spec));
}

std::vector<OpCase> variant_ops(Rng& rng) {
  const int H = 2, dh = 3;
  const MD rel_k = random_mat(rng, 5, dh), rel_zero = MD::Zero(5, dh);
  const MD w1 = random_mat(rng, H, 4 * dh), w2 = random_mat(rng, H, 4 * dh), va = random_mat(rng, H, 4);
  const MD rk = random_mat(rng, 7, H * dh), u = random_mat(rng, H, dh), vb = random_mat(rng, H, dh);
  const MD z = (MD(1, H) << 2.5, 4.0).finished();
  XLConfig xl;
  xl.mem_len = 3;
  return {
      {"adaptive span", 5, 5,
       [z](Tape<double>& t, int q, int k, int v, const AttentionSpec<double>& s) {
         return span_attention(t, q, k, v, t.constant(z), s, {2, 6, SpanMaskMode::Inside});
       }},
      {"adaptive span, the reference code's distance", 5, 5,
       [z](Tape<double>& t, int q, int k, int v, const AttentionSpec<double>& s) {
         return span_attention(t, q, k, v, t.constant(z), s, {2, 6, SpanMaskMode::After, 1});
       }},
      {"Shaw (a^V = 0, so a dropped key removes exactly v_j)", 5, 5,
       [rel_k, rel_zero](Tape<double>& t, int q, int k, int v, const AttentionSpec<double>& s) {
         return shaw_attention(t, q, k, v, t.constant(rel_k), t.constant(rel_zero), s, 2);
       }},
      {"additive score", 4, 5,
       [w1, w2, va](Tape<double>& t, int q, int k, int v, const AttentionSpec<double>& s) {
         return additive_attention(t, q, k, v, t.constant(w1), t.constant(w2), t.constant(va), s);
       }},
      {"Transformer-XL (3 memory rows)", 4, 7,
       [rk, u, vb, xl](Tape<double>& t, int q, int k, int v, const AttentionSpec<double>& s) {
         return xl_relative_attention(t, q, k, v, t.constant(rk), t.constant(u), t.constant(vb), 2, xl,
                                      s.prob_keep);
       }},
  };
}

// Loss of the training forward with regularisers, the dropout draws fixed by a seeded Rng.
auto regularized_loss(const ModelConfig& c, const Example& ex, const Regularization& reg) {
  return [c, ex, reg](const ParamsT<double>& p, ParamsT<double>* grads) {
    Tape<double> tape;
    Rng rng(11);
    const auto r = build_forward<double>(tape, c, p, ex, reg, &rng);
    MD d;
    const double l = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, 0.1,
                                                    grads ? &d : nullptr, nullptr, nullptr);
    if (grads) tape.backward(r.logits, d, *grads);
    return l;
  };
}

}  // namespace

TEST_CASE("attention dropout in the variant ops acts on each probability", "[train][dropout]") {
  Rng rng(21);
  const int H = 2, dh = 3;
  for (const OpCase& c : variant_ops(rng)) {
    INFO(c.name);
    const MD Q = random_mat(rng, c.lq, H * dh), K = random_mat(rng, c.lk, H * dh),
             V = random_mat(rng, c.lk, H * dh);
    AttentionSpec<double> spec;
    spec.heads = H;
    spec.scale = 0.5;
    const MD plain = run_op(c, Q, K, V, spec);

    spec.prob_keep.assign(size_t(H * c.lq * c.lk), 2.0);  // every probability doubled
    CHECK((run_op(c, Q, K, V, spec) - 2.0 * plain).cwiseAbs().maxCoeff() < 1e-12);

    const Eigen::Index dropped = 1;  // key 1 dropped for every query and head
    spec.prob_keep.assign(size_t(H * c.lq * c.lk), 1.0);
    for (size_t n = 0; n < spec.prob_keep.size(); ++n)
      if (Eigen::Index(n) % c.lk == dropped) spec.prob_keep[n] = 0.0;
    MD v_without = V;
    v_without.row(dropped).setZero();
    AttentionSpec<double> no_dropout = spec;
    no_dropout.prob_keep.clear();
    const MD expected = run_op(c, Q, K, v_without, no_dropout);
    CHECK((run_op(c, Q, K, V, spec) - expected).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("variant ops with attention dropout: backward matches finite differences",
          "[train][grad][dropout]") {
  Rng rng(22);
  const int H = 2, dh = 3;
  for (const OpCase& c : variant_ops(rng)) {
    INFO(c.name);
    ParamsT<double> p{{"q", random_mat(rng, c.lq, H * dh)},
                      {"k", random_mat(rng, c.lk, H * dh)},
                      {"v", random_mat(rng, c.lk, H * dh)}};
    AttentionSpec<double> spec;
    spec.heads = H;
    spec.scale = 0.5;
    spec.causal = c.lq == c.lk;
    spec.prob_keep.resize(size_t(H * c.lq * c.lk));
    for (double& m : spec.prob_keep) m = rng.uniform() < 0.3 ? 0.0 : 1.0 / 0.7;
    const MD weights = random_mat(rng, c.lq, H * dh);
    check_gradients(p, [&](const ParamsT<double>& ps, ParamsT<double>* grads) {
      Tape<double> t;
      const int q = t.param("q", ps.at("q")), k = t.param("k", ps.at("k")), v = t.param("v", ps.at("v"));
      const int out = c.op(t, q, k, v, spec);
      if (grads) t.backward(out, weights, *grads);
      return t.value(out).cwiseProduct(weights).sum();
    });
  }
}

TEST_CASE("whole-model gradients with attention dropout and DropHead on every kind of head",
          "[train][grad][dropout]") {
  Regularization reg;
  reg.attention_dropout = 0.2;
  reg.drop_head = 0.4;
  const Example ex{{3, 1, 4, 1, 5, 9, 2}, {}, {1, 4, 1, 5, 9, 2, 6}};
  auto check = [&](const ModelConfig& c, const Regularization& r) {
    ParamsT<double> params = noisy_params(c);
    check_gradients(params, regularized_loss(c, ex, r), 1e-6, 8);
  };
  ModelConfig base = testing::small_config(Architecture::Decoder);
  SECTION("adaptive span") {
    ModelConfig c = base;
    c.attention_kind = SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}};
    c.adaptive_span()->max_span = 6;
    c.adaptive_span()->ramp = 2;
    c.adaptive_span()->init_z = 2.5f;
    check(c, reg);
    c.adaptive_span()->distance = SpanDistance::Reference;
    check(c, reg);
  }
  SECTION("Shaw relative positions") {
    ModelConfig c = base;
    c.attention_kind = SoftmaxAttention{.shaw = ShawConfig{}};
    c.shaw()->max_distance = 2;
    check(c, reg);
  }
  SECTION("additive score") {
    ModelConfig c = base;
    c.attention_kind = ScoreConfig{.function = ScoreFunction::Additive};
    c.score()->d_attn = 4;
    check(c, reg);
  }
  SECTION("LSH, 2 rounds") {
    ModelConfig c = base;
    c.norm_position = NormPosition::Pre;
    c.attention_kind = LshConfig{};
    c.lsh()->n_rounds = 2;
    c.lsh()->n_buckets = 4;
    c.lsh()->chunk_length = 3;
    check(c, reg);
  }
  SECTION("Transformer-XL, one segment") {
    ModelConfig c = base;
    c.positional = Positional::None;
    c.stack = XLConfig{};
    c.xl()->segment_length = 8;
    c.xl()->mem_len = 4;
    check(c, reg);
  }
  SECTION("Performer: DropHead only") {
    ModelConfig c = base;
    c.attention_kind = PerformerConfig{};
    c.performer()->features = 8;
    Regularization heads_only;
    heads_only.drop_head = 0.4;
    check(c, heads_only);
  }
}

TEST_CASE("DropHead with every head dropped zeroes every kind of head's output", "[train][dropout]") {
  Regularization reg;
  reg.drop_head = 0.999999;  // under the fixed draw below, every head of every layer drops
  const Example ex{{3, 1, 4, 1, 5}, {}, {1, 4, 1, 5, 9}};
  ModelConfig shaw = testing::small_config(Architecture::Decoder), span = shaw, performer = shaw, xl = shaw;
  shaw.attention_kind = SoftmaxAttention{.shaw = ShawConfig{}};
  span.attention_kind = SoftmaxAttention{.adaptive_span = AdaptiveSpanConfig{}};
  span.adaptive_span()->max_span = 6;
  performer.attention_kind = PerformerConfig{};
  performer.performer()->features = 8;
  xl.positional = Positional::None;
  xl.stack = XLConfig{};
  xl.xl()->segment_length = 3;
  for (const ModelConfig* c : {&shaw, &span, &performer, &xl}) {
    Tape<double> tape;
    Rng rng(11);
    const ParamsT<double> params = noisy_params(*c);
    const auto r = build_forward<double>(tape, *c, params, ex, reg, &rng);
    REQUIRE(r.attention_nodes.size() >= 2);
    for (int node : r.attention_nodes) CHECK(tape.value(node).cwiseAbs().maxCoeff() == 0.0);
  }
}

TEST_CASE("the trainer takes attention dropout and DropHead for variant heads", "[train][dropout]") {
  TrainOptions o;
  o.task = "copy";
  o.task_options.length = 6;
  o.steps = 3;
  o.batch = 2;
  o.reg.attention_dropout = 0.1;
  o.reg.drop_head = 0.1;
  for (const char* preset : {"tiny-span", "tiny-shaw", "tiny-reformer"}) {
    INFO(preset);
    Trainer trainer(preset_config(preset), o);
    for (int i = 0; i < 3; ++i) CHECK(std::isfinite(trainer.step().loss));
  }
  CHECK_THROWS_WITH(Trainer(preset_config("tiny-performer"), o),
                    Catch::Contains("Performer never forms"));
  o.reg.attention_dropout = 0.0;
  Trainer performer(preset_config("tiny-performer"), o);
  CHECK(std::isfinite(performer.step().loss));
}
