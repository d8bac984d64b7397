// Self-Attention GAN block (core/variants/sagan/sagan.h): a 2x2 feature map worked by hand, gamma = 0 is the
// identity, pooling shapes, and the preset's traced attention against a naive loop.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/config/config.h"
#include "core/tensor/error.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/variants/sagan/sagan.h"

using namespace atlas;
using Catch::Matchers::Contains;

namespace {

Mat rows_to_mat(std::initializer_list<std::initializer_list<float>> rows) {
  Mat m(static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.begin()->size()));
  int64_t i = 0;
  for (const auto& r : rows) {
    int64_t j = 0;
    for (float v : r) m(i, j++) = v;
    ++i;
  }
  return m;
}

// x rows in raster order: (0,0) [1,0], (0,1) [0,1], (1,0) [1,1], (1,1) [0,0].
// f = x [1,0]^T = [1,0,1,0], g = x [0,1]^T = [0,1,1,0], h = x [1,1]^T = [1,1,2,0], W_v = [1,-1]^T.
SaganWeights hand_weights(float gamma) {
  return {rows_to_mat({{1, 0}}), rows_to_mat({{0, 1}}), rows_to_mat({{1, 1}}),
          rows_to_mat({{1}, {-1}}), gamma};
}

}  // namespace

TEST_CASE("SAGAN 2x2 feature map worked by hand", "[sagan]") {
  const Mat x = rows_to_mat({{1, 0}, {0, 1}, {1, 1}, {0, 0}});
  const SaganResult r = sagan_block(x, 2, 2, hand_weights(0.5f), false);
  REQUIRE(r.attention.rows() == 4);
  REQUIRE(r.attention.cols() == 4);
  // Query 0 has g = 0: every score is 0, uniform attention.
  for (int i = 0; i < 4; ++i) REQUIRE(r.attention(0, i) == Approx(0.25));
  // Query 1 has g = 1: scores f = [1,0,1,0] -> [e, 1, e, 1] / (2e + 2).
  const double e = std::exp(1.0), z = 2 * e + 2;
  REQUIRE(r.attention(1, 0) == Approx(e / z));
  REQUIRE(r.attention(1, 1) == Approx(1 / z));
  REQUIRE(r.attention(1, 2) == Approx(e / z));
  // s_j = sum_i beta_ji h_i: s_0 = s_3 = (1 + 1 + 2 + 0) / 4 = 1, s_1 = s_2 = (3e + 1) / (2e + 2);
  // y_j = x_j + 0.5 s_j [1, -1].
  const double s1 = (3 * e + 1) / z;
  const double want[4][2] = {{1.5, -0.5}, {0.5 * s1, 1 - 0.5 * s1}, {1 + 0.5 * s1, 1 - 0.5 * s1}, {0.5, -0.5}};
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 2; ++c) REQUIRE(r.output(j, c) == Approx(want[j][c]));
}

TEST_CASE("SAGAN 2x2 pooling of keys and values leaves one key (the maxima)", "[sagan]") {
  const Mat x = rows_to_mat({{1, 0}, {0, 1}, {1, 1}, {0, 0}});
  const SaganResult r = sagan_block(x, 2, 2, hand_weights(0.5f), true);
  REQUIRE(r.attention.cols() == 1);
  REQUIRE(r.key_height == 1);
  // Pooled h = max(1, 1, 2, 0) = 2, all attention on it: y_j = x_j + 0.5 * 2 [1, -1].
  for (int j = 0; j < 4; ++j) {
    REQUIRE(r.attention(j, 0) == Approx(1.0));
    REQUIRE(r.output(j, 0) == Approx(x(j, 0) + 1.0));
    REQUIRE(r.output(j, 1) == Approx(x(j, 1) - 1.0));
  }
}

TEST_CASE("SAGAN pooling shapes: 4x6 -> 2x3, odd edges dropped", "[sagan]") {
  Mat x(4 * 6, 1);
  for (int i = 0; i < 24; ++i) x(i, 0) = float(i);
  const Mat p = max_pool_2x2(x, 4, 6);
  REQUIRE(p.rows() == 6);
  // Window of pooled (1, 2): rows 2-3, columns 4-5 -> max at raster index 3 * 6 + 5 = 23.
  REQUIRE(p(5, 0) == 23.0f);
  REQUIRE(p(0, 0) == 7.0f);  // rows 0-1, columns 0-1: max of 0, 1, 6, 7
  REQUIRE(max_pool_2x2(Mat::Zero(25, 3), 5, 5).rows() == 4);
  Mat big = Mat::Ones(4 * 6, 8);
  SaganWeights w{Mat::Ones(1, 8), Mat::Ones(1, 8), Mat::Ones(4, 8), Mat::Ones(8, 4), 1.0f};
  const SaganResult r = sagan_block(big, 4, 6, w, true);
  REQUIRE(r.attention.rows() == 24);
  REQUIRE(r.attention.cols() == 6);
}

TEST_CASE("SAGAN with gamma = 0 is the identity", "[sagan]") {
  Mat x(16, 8);
  for (int i = 0; i < x.size(); ++i) x.data()[i] = std::sin(0.7f * float(i));
  SaganWeights w{Mat::Constant(1, 8, 0.3f), Mat::Constant(1, 8, -0.2f), Mat::Constant(4, 8, 0.5f),
                 Mat::Constant(8, 4, 0.9f), 0.0f};
  for (bool pool : {false, true}) {
    const SaganResult r = sagan_block(x, 4, 4, w, pool);
    for (int i = 0; i < x.size(); ++i) REQUIRE(r.output.data()[i] == x.data()[i]);
  }
  // The model path with gamma 0: traced output == traced features.
  ModelConfig c = preset_config("sagan-small");
  c.sagan()->gamma = 0.0f;
  Model model(c, init_params(c, c.seed));
  const RunResult run = model.run("", "", RunOptions{});
  REQUIRE(run.trace.find("sagan.output")->tensor.data == run.trace.find("sagan.features")->tensor.data);
}

TEST_CASE("SAGAN preset: traced attention equals a naive loop over the traced features", "[sagan]") {
  const ModelConfig c = preset_config("sagan-small");
  const ParamStore params = init_params(c, c.seed);
  Model model(c, params);
  const RunResult run = model.run("", "", RunOptions{});
  const int64_t S = 32, N = S * S, C = 32, d = 4, Nk = 16 * 16;
  const Tensor& att = run.trace.find("sagan.attention")->tensor;
  REQUIRE(att.shape == Shape{1, N, Nk});
  REQUIRE(run.trace.find("sagan.image")->tensor.shape == Shape{S, S, 3});
  REQUIRE(run.trace.find("sagan.gamma")->tensor.data[0] == 1.0f);
  const Tensor& feat = run.trace.find("sagan.features")->tensor;  // [C, H, W]
  const Tensor& wf = params.at("sagan.f.w");
  const Tensor& wg = params.at("sagan.g.w");
  auto proj = [&](const Tensor& w, int64_t k, int64_t n) {
    double s = 0;
    for (int64_t ch = 0; ch < C; ++ch) s += double(w.data[size_t(k * C + ch)]) * feat.data[size_t(ch * N + n)];
    return s;
  };
  for (int64_t j : {int64_t(0), int64_t(517), N - 1}) {
    std::vector<double> score(static_cast<size_t>(Nk));
    double mx = -1e300;
    for (int64_t ky = 0; ky < 16; ++ky)
      for (int64_t kx = 0; kx < 16; ++kx) {
        double s = 0;
        for (int64_t k = 0; k < d; ++k) {
          double m = -1e300;  // max-pooled key channel k over the 2x2 window
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx) m = std::max(m, proj(wf, k, (2 * ky + dy) * S + 2 * kx + dx));
          s += proj(wg, k, j) * m;
        }
        score[size_t(ky * 16 + kx)] = s;
        mx = std::max(mx, s);
      }
    double z = 0;
    for (double& s : score) z += (s = std::exp(s - mx));
    for (int64_t i = 0; i < Nk; ++i)
      REQUIRE(att.data[size_t(j * Nk + i)] == Approx(score[size_t(i)] / z).margin(1e-5));
  }
}

TEST_CASE("SAGAN config errors and the PPM reader name the problem", "[sagan]") {
  const std::string head = R"({"name": "s", "architecture": "encoder", "sagan": )";
  REQUIRE_THROWS_WITH(parse_config(head + R"({"enabled": true, "channels": 4}})", "s.json"),
                      Contains("sagan.channels"));
  REQUIRE_THROWS_WITH(parse_config(head + R"({"image_size": 512}})", "s.json"), Contains("sagan.image_size"));
  REQUIRE_THROWS_WITH(parse_config(head + R"({"pool": true}})", "s.json"), Contains("pool_keys"));
  REQUIRE_THROWS_WITH(
      parse_config(R"({"name": "s", "architecture": "decoder", "sagan": {"enabled": true}})", "s.json"),
      Contains("sagan.enabled") && Contains("encoder"));

  const std::string path = "sagan_test_2x1.ppm";
  {
    std::ofstream out(path, std::ios::binary);
    out << "P6\n# a comment\n2 1\n255\n";
    const unsigned char px[6] = {255, 0, 0, 0, 128, 255};
    out.write(reinterpret_cast<const char*>(px), 6);
  }
  const RgbImage img = read_ppm(path);
  REQUIRE(img.width == 2);
  REQUIRE(img.height == 1);
  REQUIRE(img.rgb == std::vector<uint8_t>{255, 0, 0, 0, 128, 255});
  const RgbImage big = resize_rgb(img, 2);  // nearest: each row copies the 2 pixels
  REQUIRE(big.rgb == std::vector<uint8_t>{255, 0, 0, 0, 128, 255, 255, 0, 0, 0, 128, 255});
  {
    std::ofstream out(path, std::ios::binary);
    out << "P3\n2 1\n255\n";
  }
  REQUIRE_THROWS_WITH(read_ppm(path), Contains(path) && Contains("P6"));
  std::remove(path.c_str());
}
