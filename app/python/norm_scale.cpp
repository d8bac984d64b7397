#include "app/python/norm_scale.h"

#include <algorithm>
#include <cmath>

#include "core/formats/packed_weights.h"

namespace atlas::python {

namespace {

double row_mean(const float* r, int64_t d) {
  double m = 0;
  for (int64_t k = 0; k < d; ++k) m += r[k];
  return m / double(d);
}

Tensor norm_parameter(const Model& model, const std::string& name) {
  const auto it = model.params().find(name);
  return it == model.params().end() ? Tensor{} : to_float(it->second);
}

}  // namespace

Tensor norm_scale(const ModelConfig& c, const Tensor& x) {
  const int64_t L = x.shape.at(0), d = x.shape.at(1);
  Tensor s({L, 1});
  for (int64_t i = 0; i < L; ++i) {
    const float* r = &x.data[size_t(i * d)];
    const double mean = c.norm == NormKind::LayerNorm ? row_mean(r, d) : 0.0;
    double sq = 0;
    for (int64_t k = 0; k < d; ++k) sq += (r[k] - mean) * (r[k] - mean);
    s.data[size_t(i)] = float(c.norm == NormKind::ScaleNorm ? std::max(std::sqrt(sq), double(c.norm_eps))
                                                            : std::sqrt(sq / double(d) + c.norm_eps));
  }
  return s;
}

void renormalize_rows(const Model& model, const std::string& prefix, const Tensor& x, const Tensor& old_scale,
                      const Tensor& scale, Tensor& y) {
  const ModelConfig& c = model.config();
  const int64_t L = x.shape.at(0), d = x.shape.at(1);
  const Tensor gamma = norm_parameter(model, prefix + ".gamma"), beta = norm_parameter(model, prefix + ".beta"),
               g = norm_parameter(model, prefix + ".g");
  for (int64_t i = 0; i < L; ++i) {
    if (scale.data[size_t(i)] == old_scale.data[size_t(i)]) continue;
    const float* r = &x.data[size_t(i * d)];
    const double s = scale.data[size_t(i)], mean = c.norm == NormKind::LayerNorm ? row_mean(r, d) : 0.0;
    for (int64_t k = 0; k < d; ++k) {
      const double n = (r[k] - mean) / s;
      double v = c.norm == NormKind::ScaleNorm ? g.data.at(0) * n : n * gamma.data.at(size_t(k));
      if (!beta.data.empty()) v += beta.data[size_t(k)];
      y.data[size_t(i * d + k)] = float(v);
    }
  }
}

}  // namespace atlas::python
