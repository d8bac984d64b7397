#pragma once
// Shared by the training tests (tests/core/test_train*.cpp): token lists from ids, and the
// first oracle of every trainable variant, the inference engine itself: the training forward
// on the tape must give Model::forward's logits on the same weights.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/params.h"
#include "core/tensor/random.h"
#include "core/train/train_model.h"
#include "tests/core/token_lists.h"

namespace atlas::train::testing {

using atlas::test::tokens;

// Largest |training logit - inference logit| (no regularisers, weights from seed 5).
inline double gap_to_inference(const ModelConfig& c, const std::vector<int32_t>& src,
                               const std::vector<int32_t>& tgt) {
  const ParamStore store = init_params(c, 5);
  const Model model(c, store);
  const RunResult ref = model.forward(tokens(src), tokens(tgt), {});
  REQUIRE(ref.is_logits);
  Tape<float> tape;
  const auto r = build_forward<float>(tape, c, to_train_params<float>(store), {src, tgt, {}}, {}, nullptr);
  const MatT<float>& got = tape.value(r.logits);
  REQUIRE(got.rows() == ref.output.shape[0]);
  REQUIRE(got.cols() == ref.output.shape[1]);
  double worst = 0;
  for (int64_t i = 0; i < ref.output.numel(); ++i)
    worst = std::max(worst, double(std::abs(got.data()[i] - ref.output.data[i])));
  return worst;
}

inline void check_same_as_inference(const ModelConfig& c, const std::vector<int32_t>& src,
                                    const std::vector<int32_t>& tgt = {}) {
  CHECK(gap_to_inference(c, src, tgt) < 1e-4);
}

// The small model of the variant training tests: bytes vocabulary (pad 256, bos 257 for an
// encoder-decoder), d 16, 2 heads, d_ff 24, 2 layers (1 decoder layer when encoder-decoder).
inline ModelConfig small_config(Architecture arch, int64_t max_positions = 32) {
  ModelConfig c;
  c.name = "variant-train-test";
  c.architecture = arch;
  c.tokenizer.kind = TokenizerKind::Bytes;
  c.vocab_size = 258;
  c.pad_id = 256;
  c.bos_id = arch == Architecture::EncoderDecoder ? 257 : -1;
  c.d_model = 16;
  c.n_heads = 2;
  c.d_ff = 24;
  c.n_layers = 2;
  c.n_decoder_layers = arch == Architecture::EncoderDecoder ? 1 : 0;
  c.max_positions = max_positions;
  return c;
}

// Initial weights (seed 3) moved off their initial values by N(0, 0.1) noise (seed 4), so
// no gradient vanishes by symmetry (zero biases, unit gains).
inline ParamsT<double> noisy_params(const ModelConfig& c) {
  ParamsT<double> params = to_train_params<double>(init_params(c, 3));
  Rng noise(4);
  for (auto& [name, m] : params)
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] += 0.1 * noise.normal();
  return params;
}

// Label-smoothed cross-entropy of the training forward on `ex`, in double; fills the tape
// gradients when `grads` is given (the form finite_differences.h checks).
inline std::function<double(const ParamsT<double>&, ParamsT<double>*)> cross_entropy_loss(
    const ModelConfig& c, const Example& ex, double smoothing = 0.1) {
  return [c, ex, smoothing](const ParamsT<double>& p, ParamsT<double>* grads) {
    Tape<double> tape;
    const auto r = build_forward<double>(tape, c, p, ex, {}, nullptr);
    MatT<double> d;
    const double l = smoothed_cross_entropy<double>(tape.value(r.logits), ex.labels, smoothing,
                                                    grads ? &d : nullptr, nullptr, nullptr);
    if (grads) tape.backward(r.logits, d, *grads);
    return l;
  };
}

}  // namespace atlas::train::testing
