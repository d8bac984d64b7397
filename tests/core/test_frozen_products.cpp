// The frozen float tape's products on the engine's packed kernel (core/train/frozen_products.h)
// against naive loops in double, on shapes that are not multiples of the kernel's tiles, and
// through a frozen tape's linear and its backward.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "core/backend/cpu_gemm.h"
#include "core/train/frozen_products.h"
#include "core/train/train_tape.h"

using namespace atlas;

namespace {

std::vector<float> frozen_test_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("frozen products equal naive loops: y = x w^T and dx += dy w", "[train][frozen]") {
  if (!train::frozen_products_apply(64)) {
    CHECK_FALSE(cpu_gemm::packed_kernel_available());  // the tape then keeps Eigen's products
    return;
  }
  CHECK_FALSE(train::frozen_products_apply(3));  // a row or two: Eigen's product
  const int64_t m = 37, in = 53, out = 70;
  const std::vector<float> x = frozen_test_floats(size_t(m * in), 1), w = frozen_test_floats(size_t(out * in), 2);
  std::vector<float> y(size_t(m * out), -7.f);
  train::frozen_product_nt(m, in, out, x.data(), w.data(), y.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = 0;
      for (int64_t k = 0; k < in; ++k) s += double(x[size_t(i * in + k)]) * double(w[size_t(j * in + k)]);
      REQUIRE(y[size_t(i * out + j)] == Approx(s).margin(1e-4));
    }
  const std::vector<float> dy = frozen_test_floats(size_t(m * out), 3), dx0 = frozen_test_floats(size_t(m * in), 4);
  std::vector<float> dx = dx0;
  train::frozen_product_add_nn(m, out, in, dy.data(), w.data(), dx.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < in; ++j) {
      double s = dx0[size_t(i * in + j)];
      for (int64_t k = 0; k < out; ++k) s += double(dy[size_t(i * out + k)]) * double(w[size_t(k * in + j)]);
      REQUIRE(dx[size_t(i * in + j)] == Approx(s).margin(1e-4));
    }
}

TEST_CASE("a frozen float tape's linear and its backward equal the unfrozen tape's", "[train][frozen]") {
  using M = train::MatT<float>;
  const int64_t m = 40, in = 33, out = 29;
  const std::vector<float> xs = frozen_test_floats(size_t(m * in), 5), ws = frozen_test_floats(size_t(out * in), 6),
                           seeds = frozen_test_floats(size_t(m * out), 7);
  const M X = Eigen::Map<const M>(xs.data(), m, in), W = Eigen::Map<const M>(ws.data(), out, in),
          dY = Eigen::Map<const M>(seeds.data(), m, out);
  M B = M::Zero(1, out);
  B(0, 3) = 0.5f;
  auto run = [&](bool frozen, M& y, M& dx) {
    train::Tape<float> t;
    if (frozen) t.freeze_params();
    const int x = t.constant(X), w = t.param("w", W), b = t.param("b", B);
    const int out_id = t.linear(x, w, b);
    train::ParamsT<float> grads{{"w", M::Zero(out, in)}, {"b", M::Zero(1, out)}};
    y = t.value(out_id);
    t.backward(out_id, dY, grads);
    dx = t.grad(x);
  };
  M y_frozen, dx_frozen, y_plain, dx_plain;
  run(true, y_frozen, dx_frozen);
  run(false, y_plain, dx_plain);
  CHECK((y_frozen - y_plain).cwiseAbs().maxCoeff() < 1e-4f);
  CHECK((dx_frozen - dx_plain).cwiseAbs().maxCoeff() < 1e-4f);
  // and against the closed forms
  M expected = X * W.transpose();
  expected.rowwise() += B.row(0);
  CHECK((y_plain - expected).cwiseAbs().maxCoeff() < 1e-4f);
  CHECK((dx_plain - dY * W).cwiseAbs().maxCoeff() < 1e-4f);
}
