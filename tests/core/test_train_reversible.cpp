// Training through Reformer's reversible layers without LSH (core/train_model.cpp `reversible`)
// against independent oracles: the inference engine's reversible stack (same logits on the
// same weights; chunked feed-forward included) and central finite differences of whole
// models in double precision.
#include <catch2/catch.hpp>

#include "finite_differences.h"
#include "random.h"
#include "train_loop.h"
#include "train_test_util.h"

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
  c.lsh.reversible = true;
  c.lsh.ff_chunks = 2;
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
