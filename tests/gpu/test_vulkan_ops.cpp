// Every non-attention op of the Vulkan backend over a table of shapes (sizes 1, 3, 17, 63,
// 65, 127, 129, ... straddle the 64/128-wide workgroups and 64 x 64 matmul tiles), against a
// naive double-precision loop and against the CPU backend. Error bounds are stated per op.
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

TEST_CASE("vulkan linear matches x w^T + b over odd shapes, with and without bias", "[gpu][ops]") {
  Gpu g;
  struct Case { int64_t m, k, n; bool bias; };
  const Case cases[] = {{1, 1, 1, true},      {3, 17, 5, false},    {17, 63, 65, true},
                        {63, 65, 127, true},  {65, 129, 63, false}, {129, 3, 17, true},
                        {1, 512, 129, true},  {130, 100, 1, true},  {64, 64, 64, false},
                        {200, 257, 96, true}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(c.m, c.k, c.n, c.bias);
    Tensor x = random_tensor({c.m, c.k}, seed++), w = random_tensor({c.n, c.k}, seed++);
    Tensor b = random_tensor({c.n}, seed++);
    std::vector<double> tol;
    const std::vector<double> want = linear_oracle(x, w, c.bias ? &b : nullptr, tol);
    DTensor y = g.vk->linear(g.vk->upload(x), g.vk->upload(w), c.bias ? g.vk->upload(b) : DTensor{});
    REQUIRE(y.shape == Shape{c.m, c.n});
    const Tensor got = g.vk->download(y);
    require_close(got.data, want, tol, "vulkan linear vs loop");
    const Tensor ref = g.cpu->download(
        g.cpu->linear(g.cpu->upload(x), g.cpu->upload(w), c.bias ? g.cpu->upload(b) : DTensor{}));
    std::vector<double> tol2(tol);
    for (double& t : tol2) t *= 2;  // both within tol of the exact value
    require_close(got.data, to_double(ref.data), tol2, "vulkan linear vs cpu backend");
  }
}

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

TEST_CASE("vulkan add, scale and ReLU are exact over odd lengths", "[gpu][ops]") {
  // One IEEE operation per element: the device must agree bit for bit with float32.
  Gpu g;
  const Shape shapes[] = {{1}, {3}, {17}, {63}, {65}, {127}, {129}, {3, 333}, {100003}};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    CAPTURE(shape_str(s));
    Tensor a = random_tensor(s, seed++, -4, 4), b = random_tensor(s, seed++, -4, 4);
    DTensor da = g.vk->upload(a), db = g.vk->upload(b);
    std::vector<double> sum(a.data.size()), scaled(a.data.size()), relu(a.data.size());
    for (size_t i = 0; i < a.data.size(); ++i) {
      sum[i] = a.data[i] + b.data[i];  // float addition, then widened
      scaled[i] = a.data[i] * -0.37f;
      relu[i] = a.data[i] > 0 ? a.data[i] : 0.0f;
    }
    DTensor dsum = g.vk->add(da, db);
    REQUIRE(dsum.shape == s);
    require_close(g.vk->download(dsum).data, sum, 0.0, "add");
    require_close(g.vk->download(g.vk->scale(da, -0.37f)).data, scaled, 0.0, "scale");
    require_close(g.vk->download(g.vk->activation(da, Activation::ReLU)).data, relu, 0.0, "relu");
    const Tensor cpu_sum = g.cpu->download(g.cpu->add(g.cpu->upload(a), g.cpu->upload(b)));
    require_close(cpu_sum.data, sum, 0.0, "cpu add (oracle sanity)");
  }
  CHECK_THROWS_AS(g.vk->add(g.vk->upload(Tensor({3})), g.vk->upload(Tensor({4}))), AtlasError);
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
  x.data = xs;
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

namespace {

struct RowCase { int64_t rows, d; };
const RowCase kRowCases[] = {{1, 1},   {3, 17},   {17, 63}, {63, 65},
                             {65, 127}, {129, 129}, {2, 1000}, {5, 4099}};

}  // namespace

TEST_CASE("vulkan layer_norm matches the two-pass formula over odd rows", "[gpu][ops]") {
  // y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance.
  // Bound: |err| <= 2e-6 (|gamma| + |beta|) + 4e-7 * d^0.5 (inputs in [-3, 3] plus an offset
  // of 5 to make the mean matter; normalised values are O(1), so float rounding of a
  // d-term mean/variance is the whole error).
  Gpu g;
  uint32_t seed = 300;
  for (const RowCase& c : kRowCases) {
    CAPTURE(c.rows, c.d);
    Tensor x = random_tensor({c.rows, c.d}, seed++, -3, 3);
    for (float& v : x.data) v += 5.0f;
    Tensor gamma = random_tensor({c.d}, seed++, 0.5f, 2), beta = random_tensor({c.d}, seed++);
    const float eps = 1e-5f;
    std::vector<double> want(x.data.size()), tol(x.data.size());
    for (int64_t r = 0; r < c.rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < c.d; ++j) mean += x.data[r * c.d + j];
      mean /= c.d;
      for (int64_t j = 0; j < c.d; ++j) var += std::pow(x.data[r * c.d + j] - mean, 2);
      var /= c.d;
      for (int64_t j = 0; j < c.d; ++j) {
        const size_t i = r * c.d + j;
        want[i] = (x.data[i] - mean) / std::sqrt(var + eps) * gamma.data[j] + beta.data[j];
        tol[i] = 2e-6 * (std::fabs(gamma.data[j]) + std::fabs(beta.data[j])) + 4e-7 * std::sqrt(c.d);
      }
    }
    const Tensor got = g.vk->download(
        g.vk->layer_norm(g.vk->upload(x), g.vk->upload(gamma), g.vk->upload(beta), eps));
    require_close(got.data, want, tol, "layer_norm vs loop");
    const Tensor ref = g.cpu->download(
        g.cpu->layer_norm(g.cpu->upload(x), g.cpu->upload(gamma), g.cpu->upload(beta), eps));
    for (double& t : tol) t *= 2;
    require_close(got.data, to_double(ref.data), tol, "layer_norm vs cpu backend");
  }
}

TEST_CASE("vulkan scale_norm and row_normalize give g x / max(|x|, eps)", "[gpu][ops]") {
  // Bound: |err| <= 1e-6 |g| (outputs have |y| <= |g|; error ~ d^0.5 u of the norm).
  Gpu g;
  uint32_t seed = 400;
  for (const RowCase& c : kRowCases) {
    CAPTURE(c.rows, c.d);
    Tensor x = random_tensor({c.rows, c.d}, seed++, -2, 2);
    if (c.rows > 2)  // a zero row: the norm is clamped to eps instead of dividing by zero
      for (int64_t j = 0; j < c.d; ++j) x.data[c.d + j] = 0.0f;
    Tensor gt({1});
    gt.data[0] = 2.5f;
    const float eps = 1e-5f;
    std::vector<double> want_sn(x.data.size()), want_rn(x.data.size());
    for (int64_t r = 0; r < c.rows; ++r) {
      double ss = 0;
      for (int64_t j = 0; j < c.d; ++j) ss += double(x.data[r * c.d + j]) * x.data[r * c.d + j];
      const double nrm = std::max(std::sqrt(ss), double(eps));
      for (int64_t j = 0; j < c.d; ++j) {
        want_sn[r * c.d + j] = 2.5 * x.data[r * c.d + j] / nrm;
        want_rn[r * c.d + j] = x.data[r * c.d + j] / nrm;
      }
    }
    DTensor dx = g.vk->upload(x);
    const Tensor sn = g.vk->download(g.vk->scale_norm(dx, g.vk->upload(gt), eps));
    const Tensor rn = g.vk->download(g.vk->row_normalize(dx, eps));
    require_close(sn.data, want_sn, 2.5e-6, "scale_norm vs loop");
    require_close(rn.data, want_rn, 1e-6, "row_normalize vs loop");
    DTensor cx = g.cpu->upload(x);
    require_close(sn.data, to_double(g.cpu->download(g.cpu->scale_norm(cx, g.cpu->upload(gt), eps)).data),
                  5e-6, "scale_norm vs cpu backend");
    require_close(rn.data, to_double(g.cpu->download(g.cpu->row_normalize(cx, eps)).data), 2e-6,
                  "row_normalize vs cpu backend");
  }
  CHECK_THROWS_AS(g.vk->scale_norm(g.vk->upload(Tensor({2, 3})), g.vk->upload(Tensor({2})), 1e-5f),
                  AtlasError);
}

TEST_CASE("vulkan embedding gathers rows and scales them exactly", "[gpu][ops]") {
  Gpu g;
  struct Case { int64_t vocab, d; std::vector<int32_t> ids; float scale; };
  const Case cases[] = {{1, 1, {0}, 1.0f},
                        {17, 3, {16, 0, 5, 5, 16}, 22.627417f},
                        {129, 65, {128, 1, 2, 3, 64, 127, 0, 0, 100}, 0.5f},
                        {50, 129, std::vector<int32_t>(63, 7), 1.0f},
                        {5, 4, {}, 1.0f}};
  uint32_t seed = 500;
  for (const Case& c : cases) {
    CAPTURE(c.vocab, c.d, c.ids.size());
    Tensor table = random_tensor({c.vocab, c.d}, seed++);
    std::vector<double> want;
    for (int32_t id : c.ids)
      for (int64_t j = 0; j < c.d; ++j) want.push_back(table.data[id * c.d + j] * c.scale);
    DTensor y = g.vk->embedding(g.vk->upload(table), c.ids, c.scale);
    REQUIRE(y.shape == Shape{static_cast<int64_t>(c.ids.size()), c.d});
    const Tensor got = g.vk->download(y);
    require_close(got.data, want, 0.0, "embedding vs loop");
    require_close(got.data,
                  to_double(g.cpu->download(g.cpu->embedding(g.cpu->upload(table), c.ids, c.scale)).data),
                  0.0, "embedding vs cpu backend");
  }
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
