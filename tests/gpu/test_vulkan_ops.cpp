// What the backend-ops harness (test_backend_ops.cpp: linear, add, scale, activation,
// layer_norm, scale_norm, row_normalize, embedding over shape tables straddling the 64/128-wide
// workgroups and 64 x 64 matmul tiles, on every backend, against double-precision loops) does
// not cover: a 3-D linear input, GELU over a dense sweep with the erf approximation's piece
// boundaries, shape and id errors, and upload/download round trips. Error bounds are stated
// per test.
#include <cmath>

#include "tests/gpu/gpu_test_util.h"

using namespace atlas;
using namespace atlas::gpu_test;

namespace {

// Bound for a float32 dot product of K terms (recursive or blocked summation):
// |err| <= (K + 2) u sum_k |x_k w_k| (+ |b|), u = 2^-24.
std::vector<double> linear_oracle(const Tensor& x, const Tensor& w, const Tensor* b,
                                  std::vector<double>& tol) {
  const int64_t K = w.shape[1], N = w.shape[0], M = x.numel() / K;
  std::vector<double> y(static_cast<size_t>(M * N));
  tol.assign(y.size(), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b ? b->data[n] : 0.0, mag = b ? std::fabs(b->data[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(x.data[m * K + k]) * w.data[n * K + k];
        s += p;
        mag += std::fabs(p);
      }
      y[m * N + n] = s;
      tol[m * N + n] = (K + 2) * kU * mag + 1e-30;
    }
  return y;
}

}  // namespace

TEST_CASE("vulkan linear accepts a 3-D input as rows of its last dimension", "[gpu][ops]") {
  Gpu g;
  Tensor x = random_tensor({2, 3, 7}, 5), w = random_tensor({4, 7}, 6);
  std::vector<double> tol;
  const auto want = linear_oracle(x, w, nullptr, tol);
  DTensor y = g.vk->linear(g.vk->upload(x), g.vk->upload(w), {});
  REQUIRE(y.shape == Shape{6, 4});
  require_close(g.vk->download(y).data, want, tol, "linear 3-D");
  CHECK_THROWS_AS(g.vk->linear(g.vk->upload(random_tensor({2, 5}, 1)), g.vk->upload(w), {}),
                  AtlasError);
}

TEST_CASE("vulkan GELU (erf and tanh forms) is accurate over a dense sweep", "[gpu][ops]") {
  // Oracle: double precision std::erf / std::tanh of the float input.
  // Bounds: GELU erf |err| <= 3e-7 max(1, |x|); GELU tanh |err| <= 3e-7 max(1, |x|). The
  // erf approximation itself is within 1e-10 (shaders/erf.glsl); the rest is float32
  // rounding (the result has ulp 6e-8 |x| near x, so a few ulp).
  Gpu g;
  std::vector<float> xs;
  for (int i = -20000; i <= 20000; ++i) xs.push_back(static_cast<float>(i) * 0.0005f);  // [-10, 10]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, -1e-8f, 30.0f, -30.0f, 1e4f, -1e4f,
                  0.999999f, 1.000001f, 3.99999f, 4.00001f, -2.82842f, -5.65685f})
    xs.push_back(v);
  // x / sqrt(2) crossing the erf piece boundaries at 1 and 4.
  for (float a : {1.0f, 4.0f})
    for (int d = -3; d <= 3; ++d) {
      xs.push_back(std::nextafter(a * 1.41421356f, 0.0f) + d * 1e-6f);
      xs.push_back(-(a * 1.41421356f + d * 1e-6f));
    }
  Tensor x({static_cast<int64_t>(xs.size())});
  x.data.assign(xs.begin(), xs.end());
  std::vector<double> erf_want(xs.size()), tanh_want(xs.size()), tol(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    erf_want[i] = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
    tanh_want[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    tol[i] = 3e-7 * std::max(1.0, std::fabs(v));
  }
  DTensor dx = g.vk->upload(x);
  const Tensor ge = g.vk->download(g.vk->activation(dx, Activation::GeluErf));
  const Tensor gt = g.vk->download(g.vk->activation(dx, Activation::GeluTanh));
  require_close(ge.data, erf_want, tol, "gelu erf vs double");
  require_close(gt.data, tanh_want, tol, "gelu tanh vs double");
  std::vector<double> tol2(tol);
  for (double& t : tol2) t *= 2;
  DTensor cx = g.cpu->upload(x);
  require_close(ge.data, to_double(g.cpu->download(g.cpu->activation(cx, Activation::GeluErf)).data),
                tol2, "gelu erf vs cpu backend");
  require_close(gt.data, to_double(g.cpu->download(g.cpu->activation(cx, Activation::GeluTanh)).data),
                tol2, "gelu tanh vs cpu backend");
}

TEST_CASE("vulkan elementwise, norm and embedding ops name bad shapes and ids", "[gpu][ops]") {
  Gpu g;
  CHECK_THROWS_AS(g.vk->add(g.vk->upload(Tensor({3})), g.vk->upload(Tensor({4}))), AtlasError);
  CHECK_THROWS_AS(g.vk->scale_norm(g.vk->upload(Tensor({2, 3})), g.vk->upload(Tensor({2})), 1e-5f),
                  AtlasError);
  DTensor t = g.vk->upload(random_tensor({4, 2}, 1));
  CHECK_THROWS_WITH(g.vk->embedding(t, {0, 4}, 1.0f), Catch::Contains("outside vocab of 4"));
  CHECK_THROWS_AS(g.vk->embedding(t, {-1}, 1.0f), AtlasError);
}

TEST_CASE("vulkan upload and download round-trip every value, including empty tensors",
          "[gpu][ops]") {
  Gpu g;
  Tensor t = random_tensor({3, 5, 7}, 9, -1e30f, 1e30f);
  t.data[0] = INFINITY;
  t.data[1] = -0.0f;
  t.data[2] = 1e-42f;  // denormal: a copy, not arithmetic, so it must survive
  const Tensor back = g.vk->download(g.vk->upload(t));
  REQUIRE(back.shape == t.shape);
  CHECK(std::memcmp(back.data.data(), t.data.data(), t.data.size() * 4) == 0);
  const Tensor empty = g.vk->download(g.vk->upload(Tensor({0, 4})));
  CHECK(empty.shape == Shape{0, 4});
  CHECK(empty.data.empty());
  std::unique_ptr<Backend> other = make_cpu_backend();
  CHECK_THROWS_WITH(g.vk->download(other->upload(t)), Catch::Contains("another backend"));
}
