// Test cases of layer_norm, scale_norm, row_normalize and rms_norm (op_case.h) over rows that
// straddle the 64/128-wide row reductions. References: double-precision two-pass loops, and
// rms_norm's host reference (core/backend/backend.cpp).
#include <cmath>

#include "core/backend/op_registry.h"
#include "tests/backend_ops/compare.h"
#include "tests/backend_ops/op_case.h"

namespace atlas::op_test {
namespace {

using train::ParamsT;
using train::Tape;

struct Rows { int64_t rows, d; };
const std::vector<Rows> kRows = {{1, 1},    {3, 17},    {17, 63},  {63, 65},  {65, 127},
                                 {129, 129}, {2, 1000}, {5, 4099}, {4, 64},  {3, 128}};
std::string rows_label(const Rows& r) { return dims({r.rows, r.d}); }

// ---- layer_norm: (x - mean) / sqrt(var + eps) * gamma + beta, biased variance ----------
struct LayerNormIn { Tensor x, gamma, beta; };
constexpr float kLnEps = 1e-5f;

const Register layer_norm_case(make_case(OpTest<Rows, LayerNormIn>{
    Op::LayerNorm,
    {"y"},
    kRows,
    rows_label,
    [](const Rows& r, uint32_t seed) {
      LayerNormIn in{random_tensor({r.rows, r.d}, seed, -3, 3), random_tensor({r.d}, seed + 1, 0.5f, 2),
                     random_tensor({r.d}, seed + 2)};
      for (float& v : in.x.data) v += 5.0f;  // an offset, so the mean matters
      return in;
    },
    [](Backend& be, const LayerNormIn& in) {
      return std::vector<Tensor>{
          be.download(be.layer_norm(be.upload(in.x), be.upload(in.gamma), be.upload(in.beta), kLnEps))};
    },
    [](const LayerNormIn& in) {
      const int64_t R = in.x.shape[0], d = in.x.shape[1];
      Want w{in.x.shape, std::vector<double>(in.x.data.size())};
      for (int64_t r = 0; r < R; ++r) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < d; ++j) mean += in.x.data[size_t(r * d + j)];
        mean /= double(d);
        for (int64_t j = 0; j < d; ++j) var += std::pow(in.x.data[size_t(r * d + j)] - mean, 2);
        var /= double(d);
        for (int64_t j = 0; j < d; ++j) {
          const size_t i = size_t(r * d + j);
          w.data[i] = (in.x.data[i] - mean) / std::sqrt(var + kLnEps) * in.gamma.data[size_t(j)] + in.beta.data[size_t(j)];
        }
      }
      return std::vector<Want>{w};
    },
    // |err| <= 2e-6 (|gamma| + |beta|) + 4e-7 d^0.5: normalised values are O(1), so float
    // rounding of a d-term mean and variance is the whole error.
    [](const LayerNormIn& in, size_t, const std::vector<double>& want) {
      const int64_t d = in.x.shape[1];
      std::vector<double> tol(want.size());
      for (size_t i = 0; i < tol.size(); ++i) {
        const size_t j = i % size_t(d);
        tol[i] = 2e-6 * (std::fabs(in.gamma.data[j]) + std::fabs(in.beta.data[j])) + 4e-7 * std::sqrt(double(d));
      }
      return tol;
    },
    [](const LayerNormIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"x", to_mat(in.x)}, {"g", to_mat(in.gamma)}, {"b", to_mat(in.beta)}},
                    [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.layer_norm(tape_param(t, p, "x"), tape_param(t, p, "g"),
                                          tape_param(t, p, "b"), kLnEps);
                    }};
    }}));

// ---- scale_norm g x / max(|x|, eps) and row_normalize x / max(|x|, eps) ------------------
struct NormIn { Tensor x, g; };
constexpr float kNormEps = 1e-5f;

NormIn norm_in(const Rows& r, uint32_t seed) {
  NormIn in{random_tensor({r.rows, r.d}, seed, -2, 2), Tensor({1})};
  if (r.rows > 2)  // a zero row: the norm is clamped to eps instead of dividing by zero
    for (int64_t j = 0; j < r.d; ++j) in.x.data[size_t(r.d + j)] = 0.0f;
  in.g.data[0] = 2.5f;
  return in;
}

Want scaled_rows(const Tensor& x, double g) {
  const int64_t R = x.shape[0], d = x.shape[1];
  Want w{x.shape, std::vector<double>(x.data.size())};
  for (int64_t r = 0; r < R; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += double(x.data[size_t(r * d + j)]) * x.data[size_t(r * d + j)];
    const double nrm = std::max(std::sqrt(ss), double(kNormEps));
    for (int64_t j = 0; j < d; ++j) w.data[size_t(r * d + j)] = g * x.data[size_t(r * d + j)] / nrm;
  }
  return w;
}

bool has_zero_row(const Tensor& x) {
  const int64_t d = x.shape[1];
  for (int64_t r = 0; r < x.shape[0]; ++r) {
    bool zero = true;
    for (int64_t j = 0; j < d; ++j) zero = zero && x.data[size_t(r * d + j)] == 0.0f;
    if (zero) return true;
  }
  return false;
}

// |err| <= 1e-6 |g| (|y| <= |g|; the error is ~d^0.5 u of the norm): 2.5e-6 for g = 2.5.
const Register scale_norm_case(make_case(OpTest<Rows, NormIn>{
    Op::ScaleNorm, {"y"}, kRows, rows_label, norm_in,
    [](Backend& be, const NormIn& in) {
      return std::vector<Tensor>{be.download(be.scale_norm(be.upload(in.x), be.upload(in.g), kNormEps))};
    },
    [](const NormIn& in) { return std::vector<Want>{scaled_rows(in.x, in.g.data[0])}; },
    [](const NormIn&, size_t, const std::vector<double>& want) { return uniform_tol(want.size(), 2.5e-6); },
    [](const NormIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"x", to_mat(in.x)}, {"g", to_mat(in.g)}},
                    [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.scale_norm(tape_param(t, p, "x"), tape_param(t, p, "g"), kNormEps);
                    },
                    !has_zero_row(in.x)};  // |x| = eps is a kink a probe would cross
    }}));

const Register row_normalize_case(make_case(OpTest<Rows, NormIn>{
    Op::RowNormalize, {"y"}, kRows, rows_label, norm_in,
    [](Backend& be, const NormIn& in) {
      return std::vector<Tensor>{be.download(be.row_normalize(be.upload(in.x), kNormEps))};
    },
    [](const NormIn& in) { return std::vector<Want>{scaled_rows(in.x, 1.0)}; },
    [](const NormIn&, size_t, const std::vector<double>& want) { return uniform_tol(want.size(), 1e-6); },
    [](const NormIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"x", to_mat(in.x)}},
                    [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.scale_norm(tape_param(t, p, "x"), -1, kNormEps);  // FixNorm: g = 1
                    },
                    !has_zero_row(in.x)};
    }}));

// ---- rms_norm: x / sqrt(mean x^2 + eps) * w --------------------------------------------------
struct RmsIn { Tensor x, w; };
constexpr float kRmsEps = 1e-6f;

const Register rms_norm_case(make_case(OpTest<Rows, RmsIn>{
    Op::RmsNorm, {"y"}, kRows, rows_label,
    [](const Rows& r, uint32_t seed) { return RmsIn{random_tensor({r.rows, r.d}, seed), random_tensor({r.d}, seed + 1)}; },
    [](Backend& be, const RmsIn& in) {
      return std::vector<Tensor>{be.download(be.rms_norm(be.upload(in.x), be.upload(in.w), kRmsEps))};
    },
    [](const RmsIn& in) { return std::vector<Want>{want_of(rms_norm_reference(in.x, in.w, kRmsEps))}; },
    // Against the exact value |err| <= 1e-6 + 1e-5 |y|; the host reference is float too, so
    // against it twice that.
    [](const RmsIn&, size_t, const std::vector<double>& want) { return rel_tol(want, 2e-6, 2e-5); },
    [](const RmsIn& in) -> std::optional<TapeOp> {
      return TapeOp{{{"x", to_mat(in.x)}, {"w", to_mat(in.w)}}, [](Tape<double>& t, const ParamsT<double>& p) {
                      return t.rms_norm(tape_param(t, p, "x"), tape_param(t, p, "w"), kRmsEps);
                    }};
    }}));

}  // namespace
}  // namespace atlas::op_test
