// Training through Reformer LSH attention (core/train/train_model_impl.h `lsh_attention`) against
// independent oracles: the inference engine's hashed, chunked, multi-round attention (same
// logits on the same weights: one and two rounds, several chunks, causal and padded, with the
// reversible stack of tiny-reformer), and central finite differences of whole models. The
// buckets are piecewise constant: probes that would flip a bucket are rare at h = 1e-5.
#include <catch2/catch.hpp>

#include "tests/core/finite_differences.h"
#include "core/model/presets.h"
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

ModelConfig lsh_config(Architecture arch, int64_t rounds) {
  ModelConfig c = testing::small_config(arch, 32);
  c.norm_position = NormPosition::Pre;
  c.attention_kind = LshConfig{};
  c.lsh()->n_rounds = rounds;
  c.lsh()->n_buckets = 4;
  c.lsh()->chunk_length = 3;  // 10 tokens: 4 chunks, so chunking really cuts keys
  c.lsh()->seed = 5;
  return c;
}

}  // namespace

TEST_CASE("LSH training forward equals the inference engine", "[train][lsh]") {
  const std::vector<int32_t> text = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  for (int64_t rounds : {1, 2}) {
    INFO(rounds << " rounds");
    CHECK(gap_to_inference(lsh_config(Architecture::Decoder, rounds), text, {}) < 1e-4);
    CHECK(gap_to_inference(lsh_config(Architecture::Encoder, rounds), {3, 1, 4, 1, 5, 9, 2, 256, 256}, {}) < 1e-4);
    ModelConfig reversible = lsh_config(Architecture::Decoder, rounds);
    reversible.stack = ReversibleConfig{};
    CHECK(gap_to_inference(reversible, text, {}) < 1e-4);
  }
  ModelConfig reformer = preset_config("tiny-reformer");
  reformer.d_model = 16;
  reformer.d_ff = 24;
  reformer.lsh()->chunk_length = 4;
  CHECK(gap_to_inference(reformer, text, {}) < 1e-4);
}

TEST_CASE("whole-model gradients through LSH attention", "[train][grad][lsh]") {
  for (Architecture arch : {Architecture::Encoder, Architecture::Decoder}) {
    INFO((arch == Architecture::Encoder ? "encoder with padding" : "causal decoder") << ", 2 rounds");
    const ModelConfig c = lsh_config(arch, 2);
    const Example ex{{3, 1, 4, 1, 5, 9, 2, 256}, {}, {1, 4, 1, 5, 9, 2, 6, -1}};
    ParamsT<double> params = noisy_params(c);
    const auto loss = cross_entropy_loss(c, ex);
    CHECK(check_gradients(params, loss, 1e-6, 6) > 80);
  }
}
