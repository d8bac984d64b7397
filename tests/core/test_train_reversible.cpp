// Training through Reformer's reversible layers without LSH (core/train/train_model_impl.h `reversible`)
// against independent oracles: the inference engine's reversible stack (same logits on the
// same weights; chunked feed-forward included) and central finite differences of whole
// models in double precision.
#include <catch2/catch.hpp>

#include "tests/core/finite_differences.h"
#include "core/tensor/random.h"
#include "core/train/train_loop.h"
#include "tests/core/train_test_util.h"

using namespace atlas;
using namespace atlas::train;
using fd::check_gradients;
using testing::cross_entropy_loss;
using testing::gap_to_inference;
using testing::noisy_params;
using MD = MatT<double>;

namespace {

ModelConfig reversible_config(Architecture arch) {
  ModelConfig c = testing::small_config(arch, 16);
  c.n_layers = 3;
  c.norm_position = NormPosition::Pre;
  c.stack = ReversibleConfig{2};  // feed-forward in 2 chunks
  return c;
}

}  // namespace

TEST_CASE("reversible-layer training forward equals the inference engine", "[train][reversible]") {
  CHECK(gap_to_inference(reversible_config(Architecture::Encoder), {5, 6, 7, 8, 9, 256}, {}) < 1e-4);
  CHECK(gap_to_inference(reversible_config(Architecture::Decoder), {1, 2, 3, 4, 5, 6, 7}, {}) < 1e-4);
}

TEST_CASE("whole-model gradients through reversible layers", "[train][grad][reversible]") {
  for (Architecture arch : {Architecture::Encoder, Architecture::Decoder}) {
    INFO((arch == Architecture::Encoder ? "encoder" : "decoder"));
    const ModelConfig c = reversible_config(arch);
    const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
    ParamsT<double> params = noisy_params(c);
    const auto loss = cross_entropy_loss(c, ex);
    CHECK(check_gradients(params, loss, 1e-6, 6) > 80);
  }
}

TEST_CASE("reversible layers with dropout: the recomputation replays the same draws",
          "[train][grad][reversible]") {
  // The backward rebuilds each layer's input and re-runs its halves; a different dropout draw
  // there would break the reconstruction and the gradients both.
  ModelConfig c = reversible_config(Architecture::Decoder);
  Regularization reg;
  reg.dropout = 0.2;
  reg.attention_dropout = 0.2;
  reg.drop_head = 0.3;
  reg.layer_drop = 0.3;
  const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
  ParamsT<double> params = noisy_params(c);
  const auto loss = [&](const ParamsT<double>& p, ParamsT<double>* grads) {
    Tape<double> tape;
    Rng rng(11);
    const auto r = build_forward<double>(tape, c, p, ex, reg, &rng);
    MD d;
    const double l = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, 0.1,
                                                    grads ? &d : nullptr, nullptr, nullptr);
    if (grads) tape.backward(r.logits, d, *grads);
    return l;
  };
  CHECK(check_gradients(params, loss, 1e-6, 6) > 80);
}

TEST_CASE("reversible layers keep one stream per stack, not one per layer", "[train][reversible]") {
  // Tape memory after the forward: a reversible stack releases each layer's input (the
  // backward rebuilds it), so going from 2 to 8 layers adds less than one [L, 2d] stream;
  // the same model without reversible layers adds every layer's activations.
  const Example ex{{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {}, {1, 4, 1, 5, 9, 2, 6, 5, 3, 5}};
  auto stored = [&](bool reversible, int64_t layers) {
    ModelConfig c = reversible_config(Architecture::Decoder);
    c.stack = reversible ? StackKind{ReversibleConfig{}} : StackKind{StandardStack{}};
    c.n_layers = layers;
    const ParamsT<double> params = noisy_params(c);
    Tape<double> tape;
    build_forward<double>(tape, c, params, ex, {}, nullptr);
    return double(tape.stored_bytes());
  };
  const double stream = 10 * 2 * 16 * sizeof(double);
  CHECK(stored(true, 8) - stored(true, 2) < stream);
  CHECK(stored(false, 8) - stored(false, 2) > 6 * 4 * stream);
}

TEST_CASE("a reversible stack trains: gradients from recomputation lower the loss", "[train][reversible]") {
  // Independent of the finite differences above: plain gradient descent on one batch with the
  // recomputed gradients must reduce that batch's loss.
  const ModelConfig c = reversible_config(Architecture::Decoder);
  const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
  ParamsT<double> params = noisy_params(c);
  const auto loss = cross_entropy_loss(c, ex, 0.0);
  ParamsT<double> grads;
  const double before = loss(params, &grads);
  for (auto& [name, m] : params) m -= 0.05 * grads.at(name);
  CHECK(loss(params, nullptr) < before - 1e-3);
}
