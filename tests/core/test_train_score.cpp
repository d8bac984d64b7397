// Training with seed 004's score functions (core/variants/score_functions/train_score.h) against independent oracles:
// the inference engine's score-function attention (core/variants/score_functions/score_functions.cpp; same logits on
// the same weights, self- and cross-attention, causal and padding masks) and central finite
// differences of whole models in double precision, for dot, general, additive, cosine and
// location.
#include <catch2/catch.hpp>

#include "tests/core/finite_differences.h"
#include "core/tensor/random.h"
#include "core/variants/score_functions/score_functions.h"
#include "core/train/train_loop.h"
#include "tests/core/train_test_util.h"

using namespace atlas;
using namespace atlas::train;
using fd::check_gradients;
using testing::check_same_as_inference;
using testing::cross_entropy_loss;
using testing::noisy_params;
using MD = MatT<double>;

namespace {

const ScoreFunction kTrainable[] = {ScoreFunction::Dot, ScoreFunction::General, ScoreFunction::Additive,
                                    ScoreFunction::Cosine, ScoreFunction::Location};

ModelConfig score_config(Architecture arch, ScoreFunction f) {
  ModelConfig c = testing::small_config(arch, 12);
  c.attention_kind = ScoreConfig{.function = f};
  c.score()->d_attn = 6;
  c.score()->strength = 3.0f;
  return c;
}

}  // namespace

TEST_CASE("score-function training forward equals the inference engine", "[train][score]") {
  for (ScoreFunction f : kTrainable) {
    INFO(score_function_name(f));
    check_same_as_inference(score_config(Architecture::Encoder, f), {5, 6, 7, 8, 9, 256});
    check_same_as_inference(score_config(Architecture::Decoder, f), {1, 2, 3, 4, 5, 6, 7});
    check_same_as_inference(score_config(Architecture::EncoderDecoder, f), {65, 66, 67, 68}, {257, 65, 66});
  }
}

TEST_CASE("whole-model gradients through every score function", "[train][grad][score]") {
  for (ScoreFunction f : kTrainable) {
    for (Architecture arch : {Architecture::Encoder, Architecture::Decoder}) {
      INFO(score_function_name(f) << (arch == Architecture::Encoder ? " encoder" : " decoder"));
      const ModelConfig c = score_config(arch, f);
      const Example ex{{3, 1, 4, 1, 5, 9}, {}, {1, 4, 1, 5, 9, 2}};
      ParamsT<double> params = noisy_params(c);
      const auto loss = cross_entropy_loss(c, ex);
      CHECK(check_gradients(params, loss, 1e-6, 6) > 80);
      if (score_function_has_weights(f)) {  // the score weights really get gradients
        ParamsT<double> grads;
        loss(params, &grads);
        const std::string n = f == ScoreFunction::Additive ? ".score.w1" : ".score.w";
        const std::string layer = arch == Architecture::Encoder ? "encoder.layer0.attn" : "decoder.layer0.self_attn";
        REQUIRE(grads.count(layer + n));
        CHECK(grads.at(layer + n).norm() > 1e-6);
      }
    }
  }
}
