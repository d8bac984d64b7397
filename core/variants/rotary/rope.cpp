#include "core/variants/rotary/rope.h"

#include <algorithm>

#include "core/backend/backend.h"
#include "core/backend/module_op.h"
#include "core/tensor/error.h"

namespace atlas {

int64_t rope_rotary_dims(const ModelConfig& c) {
  return c.rope.rotary_dims > 0 ? c.rope.rotary_dims : c.d_head();
}

RopeArgs rope_args(const ModelConfig& c) {
  RopeArgs a;
  a.heads = static_cast<int>(c.n_heads);
  a.rotary_dims = rope_rotary_dims(c);
  a.adjacent_pairs = c.rope.pairing == RopePairing::Adjacent;
  return a;
}

// The scalings follow Hugging Face's rope_init_functions (modeling_rope_utils.py) formula by
// formula; the test works each one by hand.
std::vector<float> rope_frequencies(const ModelConfig& c, int64_t length) {
  const RopeConfig& r = c.rope;
  const int64_t dims = rope_rotary_dims(c), half = dims / 2;
  const double original = double(r.original_max_positions > 0 ? r.original_max_positions : c.max_positions);
  double theta = r.theta;
  if (r.scaling == RopeScaling::Dynamic && double(length) > original)  // NTK-aware base
    theta *= std::pow(r.factor * double(length) / original - (r.factor - 1.0),
                      double(dims) / double(dims - 2));
  std::vector<float> w(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(theta, double(2 * i) / double(dims));
    if (r.scaling == RopeScaling::Linear) f /= r.factor;
    if (r.scaling == RopeScaling::Llama3) {
      const double wavelength = 2.0 * M_PI / f;
      const double low_wavelength = original / r.low_freq_factor;    // longer: divided
      const double high_wavelength = original / r.high_freq_factor;  // shorter: kept
      if (wavelength > low_wavelength) {
        f /= r.factor;
      } else if (wavelength >= high_wavelength) {
        const double smooth = (original / wavelength - r.low_freq_factor) /
                              (double(r.high_freq_factor) - r.low_freq_factor);
        f = (1.0 - smooth) * f / r.factor + smooth * f;
      }
    }
    w[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return w;
}

Tensor rope_table(const std::vector<float>& frequencies, int64_t first, int64_t length) {
  const int64_t half = static_cast<int64_t>(frequencies.size());
  Tensor t({length, 2 * half});
  for (int64_t p = 0; p < length; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(first + p) * double(frequencies[static_cast<size_t>(i)]);
      t.data[static_cast<size_t>(p * 2 * half + i)] = static_cast<float>(std::cos(angle));
      t.data[static_cast<size_t>(p * 2 * half + half + i)] = static_cast<float>(std::sin(angle));
    }
  return t;
}

void check_rope_shapes(const Shape& x, const Shape& table, const RopeArgs& a) {
  const bool ok = x.size() == 2 && table.size() == 2 && a.heads > 0 && x[1] % a.heads == 0 &&
                  a.rotary_dims >= 0 && a.rotary_dims % 2 == 0 &&
                  a.rotary_dims <= x[1] / a.heads && table[0] == x[0] && table[1] == a.rotary_dims;
  if (!ok)
    throw AtlasError("rope: x " + shape_str(x) + " and table " + shape_str(table) +
                     " do not fit " + std::to_string(a.heads) + " heads of " +
                     std::to_string(a.rotary_dims) + " rotated dimensions");
}

Tensor rope_reference(const Tensor& x, const Tensor& table, const RopeArgs& args) {
  check_rope_shapes(x.shape, table.shape, args);
  Tensor out = x;
  const int64_t L = x.shape[0], width = x.shape[1], d_head = width / args.heads;
#pragma omp parallel for schedule(static) if (L > 256)
  for (int64_t l = 0; l < L; ++l)
    rope_rotate_row(out.data.data() + l * width, table.data.data() + l * args.rotary_dims, args,
                    d_head);
  return out;
}

namespace {

std::vector<Tensor> rope_on_host(const std::vector<Tensor>& in, const RopeArgs& args) {
  return {rope_reference(in.at(0), in.at(1), args)};
}

bool uses_rope(const ModelConfig& c) { return c.positional == Positional::Rotary; }

constexpr ModuleOpOf<RopeArgs> kRope = module_op<RopeArgs, rope_on_host>(
    "rope", "rotary position embedding of queries and keys computed on the host", uses_rope);
const RegisterModuleOp kRegisterRope(kRope.op);

}  // namespace

const ModuleOp& rope_op() { return kRope.op; }

DTensor apply_rope(Backend& be, const DTensor& x, const DTensor& table, const RopeArgs& args) {
  check_rope_shapes(x.shape, table.shape, args);
  return run_op(be, kRope, {x, table}, args).at(0);
}

}  // namespace atlas
