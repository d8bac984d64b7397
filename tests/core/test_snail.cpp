// SNAIL (core/variants/snail/snail.h): a dense block and an attention block by hand, causality by
// perturbation, and the receptive field against dilation arithmetic done by hand.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/variants/snail/snail.h"

using namespace atlas;

TEST_CASE("SNAIL dense block by hand: tanh(xf) * sigmoid(xg), concatenated", "[snail]") {
  Mat x(3, 1);
  x << 1, 2, 3;
  Mat wf(1, 2), wg(1, 2);
  wf << 1, 1;  // x_t + x_{t-1}
  wg << 0, 0;  // sigmoid(0) = 0.5
  const Mat out = snail_dense_block(x, 1, wf, RowVec::Zero(1), wg, RowVec::Zero(1));
  REQUIRE(out.cols() == 2);
  const double want[3] = {std::tanh(1.0) * 0.5, std::tanh(3.0) * 0.5, std::tanh(5.0) * 0.5};
  for (int t = 0; t < 3; ++t) {
    REQUIRE(out(t, 0) == x(t, 0));
    REQUIRE(out(t, 1) == Approx(want[t]));
  }
  // Dilation 2: x_t + x_{t-2} = 1, 2, 4.
  const Mat d2 = snail_dense_block(x, 2, wf, RowVec::Zero(1), wg, RowVec::Zero(1));
  REQUIRE(d2(1, 1) == Approx(std::tanh(2.0) * 0.5));
  REQUIRE(d2(2, 1) == Approx(std::tanh(4.0) * 0.5));
}

TEST_CASE("SNAIL attention block by hand: causal softmax, concatenated read", "[snail]") {
  Mat x(2, 1);
  x << 1, 2;
  const Mat one = Mat::Ones(1, 1);
  Mat probs;
  const Mat out = snail_attention_block(x, one, one, one, &probs);
  // Row 0 sees only itself; row 1: logits [2, 4] -> [1/(1+e^2), e^2/(1+e^2)].
  const double e2 = std::exp(2.0);
  REQUIRE(probs(0, 0) == Approx(1.0));
  REQUIRE(probs(0, 1) == 0.0f);
  REQUIRE(probs(1, 0) == Approx(1 / (1 + e2)));
  REQUIRE(out(1, 1) == Approx(1 / (1 + e2) + 2 * e2 / (1 + e2)));
  REQUIRE(out(1, 0) == 2.0f);
}

TEST_CASE("SNAIL never reads the future: perturbing input t leaves outputs before t unchanged", "[snail]") {
  SnailSpec s;
  s.seed = 3;
  const int64_t L = 12;
  Mat x(L, s.d_input);
  for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(0.37f * float(i));
  Trace trace;
  const Mat base = snail_forward(s, x, &trace);
  for (int64_t t : {int64_t(0), int64_t(5), L - 1}) {
    Mat y = x;
    y.row(t).array() += 3.0f;
    const Mat out = snail_forward(s, y, nullptr);
    for (int64_t i = 0; i < t; ++i) REQUIRE((out.row(i) - base.row(i)).cwiseAbs().maxCoeff() == 0.0f);
    if (t < L - 1) REQUIRE((out.row(L - 1) - base.row(L - 1)).cwiseAbs().maxCoeff() > 0.0f);  // the future sees it
  }
  REQUIRE(trace.find("snail.attn0")->tensor.shape == Shape{1, L, L});
  REQUIRE(trace.find("snail.attn2")->tensor.shape == Shape{1, L, L});
  REQUIRE(trace.find("snail.receptive_field")->tensor.shape == Shape{L, L});
}

TEST_CASE("SNAIL receptive field matches the dilation arithmetic", "[snail]") {
  // T = 12: ceil(log2 12) = 4 blocks, dilations 1, 2, 4, 8; the paper's indexing 2, 4, 8, 16.
  REQUIRE(snail_dilations(12, false) == std::vector<int64_t>{1, 2, 4, 8});
  REQUIRE(snail_dilations(12, true) == std::vector<int64_t>{2, 4, 8, 16});
  REQUIRE(snail_dilations(1, false) == std::vector<int64_t>{1});
  // Dilations {2, 4}: reachable offsets are the subset sums 0, 2, 4, 6 (no odd offsets).
  const Mat rf = snail_receptive_field(8, {2, 4});
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const int64_t o = i - j;
      const bool want = o == 0 || o == 2 || o == 4 || o == 6;
      INFO("i " << i << " j " << j);
      REQUIRE(rf(i, j) == (want ? 1.0f : 0.0f));
    }
  // {1, 2}: offsets 0..3 only, so position 7 does not reach back to 3.
  const Mat rf2 = snail_receptive_field(8, {1, 2});
  REQUIRE(rf2(7, 4) == 1.0f);
  REQUIRE(rf2(7, 3) == 0.0f);
  // The network's traced field: two TC blocks of dilations 1, 2 (L = 4) reach offsets 0..6.
  SnailSpec s;
  Trace trace;
  snail_forward(s, Mat::Ones(4, s.d_input), &trace);
  const Tensor& t = trace.find("snail.receptive_field")->tensor;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) REQUIRE(t.data[size_t(i * 4 + j)] == (j <= i ? 1.0f : 0.0f));
}
