// Every backward function of the training tape (core/train/train_tape.h), and the whole training
// forward of each architecture, against central finite differences in double precision.
// Oracle: (L(p + h) - L(p - h)) / 2h of the same scalar loss, which never touches the
// backward code. With h = 1e-5 in double the truncation error is ~h^2 * |L'''| ~ 1e-10 and the
// rounding error ~1e-16 / h ~ 1e-11, so agreement to 1e-6 relative is a real check; a wrong
// term in any backward shows up as an O(1) relative error.
#include <catch2/catch.hpp>

#include <functional>

#include "core/tensor/random.h"
#include "core/train/train_model.h"
#include "core/train/train_tape.h"
#include "tests/core/finite_differences.h"

using namespace atlas;
using namespace atlas::train;
using MD = MatT<double>;
using fd::check_gradients;
using fd::random_mat;

namespace {

// loss = sum(out .* R) for a fixed random R, so every output entry has its own weight.
using OpBuilder = std::function<int(Tape<double>&, const ParamsT<double>&)>;
void check_op(ParamsT<double> params, const OpBuilder& op, double tol = 1e-6) {
  MD weights;
  auto loss = [&](const ParamsT<double>& p, ParamsT<double>* grads) {
    Tape<double> tape;
    const int out = op(tape, p);
    const MD& y = tape.value(out);
    if (weights.size() == 0) {
      Rng rng(99);
      weights = random_mat(rng, y.rows(), y.cols());
    }
    if (grads) tape.backward(out, weights, *grads);
    return y.cwiseProduct(weights).sum();
  };
  check_gradients(params, loss, tol);
}

int P(Tape<double>& t, const ParamsT<double>& p, const char* name) { return t.param(name, p.at(name)); }

}  // namespace

TEST_CASE("linear backward matches finite differences", "[train][grad]") {
  Rng rng(1);
  ParamsT<double> p{{"x", random_mat(rng, 3, 5)}, {"w", random_mat(rng, 4, 5)},
                    {"b", random_mat(rng, 1, 4)}};
  check_op(p, [](Tape<double>& t, const ParamsT<double>& p) {
    return t.linear(P(t, p, "x"), P(t, p, "w"), P(t, p, "b"));
  });
}

TEST_CASE("add and dropout-mask backward match finite differences", "[train][grad]") {
  Rng rng(2);
  ParamsT<double> p{{"a", random_mat(rng, 3, 4)}, {"b", random_mat(rng, 3, 4)}};
  MD mask = random_mat(rng, 3, 4);
  check_op(p, [&](Tape<double>& t, const ParamsT<double>& p) {
    const int s = t.add(P(t, p, "a"), P(t, p, "b"));
    return t.multiply_constant(t.add(s, P(t, p, "a")), mask);
  });
}

TEST_CASE("layer norm backward matches finite differences", "[train][grad]") {
  Rng rng(3);
  ParamsT<double> p{{"x", random_mat(rng, 4, 6)}, {"g", random_mat(rng, 1, 6)},
                    {"b", random_mat(rng, 1, 6)}};
  check_op(p, [](Tape<double>& t, const ParamsT<double>& p) {
    return t.layer_norm(P(t, p, "x"), P(t, p, "g"), P(t, p, "b"), 1e-5);
  });
}

TEST_CASE("scale norm and row normalisation backward match finite differences",
          "[train][grad]") {
  Rng rng(4);
  ParamsT<double> p{{"x", random_mat(rng, 4, 6)}, {"g", MD::Constant(1, 1, 2.5)}};
  check_op(p, [](Tape<double>& t, const ParamsT<double>& p) {
    return t.scale_norm(P(t, p, "x"), P(t, p, "g"), 1e-5);
  });
  check_op(p, [](Tape<double>& t, const ParamsT<double>& p) {
    return t.scale_norm(P(t, p, "x"), -1, 1e-5);  // FixNorm: g = 1, no parameter
  });
  SECTION("a row below eps: the clamped divisor is a constant") {
    // |row| ~ 0.02 under eps 0.1, far enough that the +-h steps stay on the clamped side.
    p["x"].row(1) *= 0.01;
    check_op(p, [](Tape<double>& t, const ParamsT<double>& p) {
      return t.scale_norm(P(t, p, "x"), P(t, p, "g"), 0.1);
    });
  }
}

TEST_CASE("activation backward matches finite differences", "[train][grad]") {
  Rng rng(5);
  MD x = random_mat(rng, 3, 7);
  // ReLU's kink at 0 has no derivative: keep entries away from it.
  for (Eigen::Index i = 0; i < x.size(); ++i)
    if (std::abs(x.data()[i]) < 0.05) x.data()[i] = 0.3;
  for (FfnActivation a : {FfnActivation::ReLU, FfnActivation::Gelu, FfnActivation::GeluTanh}) {
    INFO("activation " << static_cast<int>(a));
    check_op({{"x", x}}, [a](Tape<double>& t, const ParamsT<double>& p) {
      return t.activation(P(t, p, "x"), a);
    });
  }
}

TEST_CASE("embedding gather backward matches finite differences", "[train][grad]") {
  Rng rng(6);
  check_op({{"table", random_mat(rng, 5, 4)}}, [](Tape<double>& t, const ParamsT<double>& p) {
    return t.gather_rows(P(t, p, "table"), {3, 1, 3, 0}, 2.0);  // id 3 twice: sums
  });
}

TEST_CASE("multi-head attention backward matches finite differences", "[train][grad]") {
  Rng rng(7);
  ParamsT<double> p{{"q", random_mat(rng, 5, 8)}, {"k", random_mat(rng, 5, 8)},
                    {"v", random_mat(rng, 5, 8)}};
  auto run = [](AttentionSpec<double> spec) {
    return [spec](Tape<double>& t, const ParamsT<double>& p) {
      return t.attention(P(t, p, "q"), P(t, p, "k"), P(t, p, "v"), spec);
    };
  };
  AttentionSpec<double> spec;
  spec.heads = 2;
  spec.scale = 0.5;
  SECTION("unmasked") { check_op(p, run(spec)); }
  SECTION("causal with a padded key (row 0 fully masked -> zeros)") {
    spec.causal = true;
    spec.key_valid = {0, 1, 1, 0, 1};
    check_op(p, run(spec));
  }
  SECTION("attention dropout and DropHead multipliers") {
    spec.prob_keep.resize(2 * 5 * 5);
    for (double& m : spec.prob_keep) m = rng.uniform() < 0.3 ? 0.0 : 1.0 / 0.7;
    spec.head_keep = {0.0, 2.0};
    check_op(p, run(spec));
  }
  SECTION("cross attention, Lq != Lk") {
    p["q"] = random_mat(rng, 3, 8);
    check_op(p, run(spec));
  }
}

TEST_CASE("label-smoothed cross-entropy gradient matches finite differences",
          "[train][grad]") {
  Rng rng(8);
  ParamsT<double> p{{"logits", random_mat(rng, 4, 6, 2.0)}};
  const std::vector<int32_t> labels{2, -1, 5, 0};
  check_gradients(p, [&](const ParamsT<double>& q, ParamsT<double>* grads) {
    MD d;
    const double l = smoothed_cross_entropy<double>(q.at("logits"), labels, 0.1,
                                                    grads ? &d : nullptr, nullptr, nullptr);
    if (grads) (*grads)["logits"] = d;
    return l;
  });
}

namespace {

ModelConfig grad_config(Architecture arch) {
  ModelConfig c;
  c.name = "grad";
  c.architecture = arch;
  c.vocab_size = 7;
  c.pad_id = 6;
  c.bos_id = 5;
  c.d_model = 8;
  c.n_heads = 2;
  c.d_ff = 12;
  c.n_layers = 2;
  c.n_decoder_layers = arch == Architecture::EncoderDecoder ? 1 : 0;
  c.max_positions = 16;
  return c;
}

// The whole training forward + smoothed loss of one example, all parameters checked.
void check_model(const ModelConfig& c, const Example& ex, const Regularization& reg = {}) {
  ParamsT<double> params = to_train_params<double>(init_params(c, 3));
  Rng noise(4);  // move LayerNorm gains/biases off 1/0 so their gradients are generic
  for (auto& [name, m] : params)
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] += 0.1 * noise.normal();
  check_gradients(params, [&](const ParamsT<double>& p, ParamsT<double>* grads) {
    Tape<double> tape;
    Rng rng(11);  // same dropout / LayerDrop / DropHead draws on every evaluation
    const auto r = build_forward<double>(tape, c, p, ex, reg, &rng);
    MD d;
    const double loss = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, 0.1,
                                                       grads ? &d : nullptr, nullptr, nullptr);
    if (grads) tape.backward(r.logits, d, *grads);
    return loss;
  }, 1e-6, 12);
}

}  // namespace

TEST_CASE("whole-model gradients: encoder, post-norm LayerNorm, ReLU, sinusoids, tied, padding",
          "[train][grad]") {
  ModelConfig c = grad_config(Architecture::Encoder);
  check_model(c, {{1, 2, 3, 6}, {}, {2, -1, 4, 0}});  // last source token is padding
}

TEST_CASE("whole-model gradients: decoder, pre-norm ScaleNorm + FixNorm, GELU, learned, untied",
          "[train][grad]") {
  ModelConfig c = grad_config(Architecture::Decoder);
  c.norm = NormKind::ScaleNorm;
  c.norm_position = NormPosition::Pre;
  c.fixnorm = true;
  c.activation = FfnActivation::Gelu;
  c.positional = Positional::Learned;
  c.output = OutputHead::Untied;
  c.attention_bias = false;
  c.ffn_bias = false;
  check_model(c, {{1, 2, 3, 4, 0}, {}, {2, 3, 4, 0, -1}});
}

TEST_CASE("whole-model gradients: encoder-decoder, pre-norm, GELU tanh, cross-attention",
          "[train][grad]") {
  ModelConfig c = grad_config(Architecture::EncoderDecoder);
  c.norm_position = NormPosition::Pre;
  c.activation = FfnActivation::GeluTanh;
  c.sinusoid_layout = SinusoidLayout::Concatenated;
  check_model(c, {{1, 2, 3, 6}, {5, 3, 2}, {3, 2, 1}});
}

TEST_CASE("whole-model gradients with dropout, attention dropout, LayerDrop and DropHead",
          "[train][grad]") {
  ModelConfig c = grad_config(Architecture::Decoder);
  c.n_layers = 3;
  Regularization reg;
  reg.dropout = 0.2;
  reg.attention_dropout = 0.2;
  reg.layer_drop = 0.3;
  reg.drop_head = 0.4;
  check_model(c, {{1, 2, 3, 4, 0}, {}, {2, 3, 4, 0, 1}}, reg);
}
