// Training with the sparse patterns (Sparse Transformer strided / fixed, Image
// Transformer local 1D / 2D): the tape applies each head's CSR pattern as a mask
// (core/train/train_model_impl.h), so the oracles are the inference engine's sparse attention (same
// logits on the same weights) and central finite differences of whole models.
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

// A preset shrunk for the tape, with strides and blocks short enough that the test sequences
// cross them (so the patterns really cut keys).
ModelConfig shrunk(const char* preset) {
  ModelConfig c = preset_config(preset);
  c.d_model = 16;
  c.n_heads = 4;
  c.d_ff = 24;
  c.n_layers = 2;
  c.max_positions = 64;
  SparseConfig& s = *c.sparse();
  if (s.pattern == SparsePattern::Strided) s.stride = 3;
  if (s.pattern == SparsePattern::Fixed) {
    s.block = 4;
    s.summary = 1;
  }
  if (s.pattern == SparsePattern::Local1D || s.pattern == SparsePattern::Local1DUnmasked) {
    s.block_length = 4;
    s.filter_width = 2;
  }
  if (s.pattern == SparsePattern::Local2D) {
    s.image_width = 4;
    s.query_h = 2;
    s.query_w = 2;
    s.flange_h = 1;
    s.flange_w = 2;
  }
  return c;
}

std::vector<int32_t> sequence(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 37 + 11) % 250);
  return ids;
}

}  // namespace

TEST_CASE("sparse training forward equals the inference engine's sparse attention", "[train][sparse]") {
  for (const char* preset : {"tiny-sparse-strided", "tiny-sparse-fixed", "tiny-local1d",
                             "tiny-local1d-unmasked", "tiny-local2d"}) {
    INFO(preset);
    const ModelConfig c = shrunk(preset);
    CHECK(gap_to_inference(c, sequence(14), {}) < 1e-4);
    // The pattern matters at this length: the same weights without it give other logits, so
    // a tape that ignored the pattern would fail the check above.
    ModelConfig dense = c;
    dense.attention_kind = SoftmaxAttention{};
    const ParamStore weights = init_params(c, 5);
    const Tensor with = Model(c, weights).forward(testing::tokens(sequence(14)), {}, {}).output;
    const Tensor without = Model(dense, weights).forward(testing::tokens(sequence(14)), {}, {}).output;
    double differ = 0;
    for (size_t i = 0; i < with.data.size(); ++i)
      differ = std::max(differ, double(std::abs(with.data[i] - without.data[i])));
    CHECK(differ > 1e-2);
  }
}

TEST_CASE("whole-model gradients through sparse patterns", "[train][grad][sparse]") {
  for (const char* preset : {"tiny-sparse-strided", "tiny-sparse-fixed", "tiny-local2d"}) {
    INFO(preset);
    const ModelConfig c = shrunk(preset);
    const std::vector<int32_t> src = sequence(9);
    std::vector<int32_t> labels(src.begin() + 1, src.end());
    labels.push_back(7);
    const Example ex{src, {}, labels};
    ParamsT<double> params = noisy_params(c);
    const auto loss = cross_entropy_loss(c, ex, 0.0);
    CHECK(check_gradients(params, loss, 1e-6, 6) > 80);
  }
}

TEST_CASE("a strided pattern learns copy at a distance its stride divides; a short local one cannot",
          "[train][sparse][slow]") {
  // Copy "abcdefgh|abcdefgh": output position i reads input i - 9. Strided with l = 3 reaches it
  // through A(2) (every third key back, 9 = 3 * 3); local 1D with blocks of 2 sees at most 3
  // keys back per layer, 6 over the two layers, so the answer is out of reach.
  auto accuracy = [](SparsePattern pattern) {
    TrainOptions o;
    o.task = "copy";
    o.task_options.length = 8;
    o.steps = 1500;
    o.batch = 16;
    o.seed = 3;
    ModelConfig c = preset_config(pattern == SparsePattern::Strided ? "tiny-sparse-strided" : "tiny-local1d");
    c.d_model = 32;
    c.d_ff = 64;
    c.sparse()->stride = 3;
    c.sparse()->block_length = 2;
    Trainer t(c, o);
    for (int i = 0; i < o.steps; ++i) t.step();
    return t.evaluate(200, 9).accuracy;
  };
  const double strided = accuracy(SparsePattern::Strided), local = accuracy(SparsePattern::Local1D);
  INFO("held-out copy accuracy: strided l=3 " << strided << ", local1d block 2 " << local);
  CHECK(strided > 0.95);
  CHECK(local < 0.5);
}
