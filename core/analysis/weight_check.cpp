// Weights and outputs float32 cannot carry (weight_check.h).
#include "core/analysis/weight_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "core/formats/packed_weights.h"
#include "core/tensor/float_scan.h"

namespace atlas {

namespace {

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "[3, 5]": the multi-index of flat position `flat` in `shape`.
std::string index_str(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    const int64_t d = std::max<int64_t>(1, shape[k]);
    idx[k] = flat % d;
    flat /= d;
  }
  std::string out = "[";
  for (size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + std::to_string(idx[k]);
  return out + "]";
}

}  // namespace

double weight_overflow_bound(const ParamStore& params) {
  int64_t n = 1;
  for (const auto& [name, t] : params)
    for (int64_t d : t.shape) n = std::max(n, d);
  return std::sqrt(double(FLT_MAX) / double(n));
}

std::vector<std::string> check_weight_magnitudes(const ParamStore& params, double bound,
                                                 size_t max_lines) {
  std::vector<std::string> out;
  size_t over = 0;
  for (const auto& [name, t] : params) {
    // NaN/Inf: check_params reports them. The scan is vectorised; only a tensor over the
    // bound is searched again for where its largest value sits.
    const float worst = scan_weights(t).max_abs;
    if (!(double(worst) > bound)) continue;
    if (++over > max_lines) continue;
    if (t.packed) {  // a bound from the block scales: no single value to point at
      out.push_back("weights: tensor " + name + " (" + held_type_name(t) + ") has block scales that reach " +
                    sci(double(worst)) + ", above " + sci(bound) +
                    ", the largest magnitude float32 arithmetic carries through this model's "
                    "products (sqrt(FLT_MAX / n), n = its largest dimension): runs may give "
                    "Inf/NaN outputs");
      continue;
    }
    int64_t at = 0;
    while (std::fabs(t.data[size_t(at)]) != worst) ++at;
    out.push_back("weights: tensor " + name + " holds " + sci(double(t.data[size_t(at)])) + " at " +
                  index_str(t.shape, at) + ", above " + sci(bound) +
                  ", the largest magnitude float32 arithmetic carries through this model's "
                  "products (sqrt(FLT_MAX / n), n = its largest dimension): runs may give "
                  "Inf/NaN outputs");
  }
  if (over > max_lines)
    out.push_back("weights: and " + std::to_string(over - max_lines) + " more tensors above " +
                  sci(bound));
  return out;
}

std::vector<std::string> weight_warnings(const Model& model) {
  return check_weight_magnitudes(model.params(), weight_overflow_bound(model.params()));
}

NonFiniteCount count_non_finite(const Tensor& t) {
  NonFiniteCount c;
  for (size_t i = 0; i < t.data.size(); ++i) {
    const float v = t.data[i];
    if (std::isfinite(v)) continue;
    if (std::isnan(v)) ++c.nan;
    else if (v > 0) ++c.pos_inf;
    else ++c.neg_inf;
    if (c.first < 0) c.first = int64_t(i);
  }
  return c;
}

std::vector<std::string> output_warnings(const RunResult& result) {
  const NonFiniteCount c = count_non_finite(result.output);
  if (c.total() == 0) return {};
  const char* what = result.is_logits ? "logits" : "hidden states";
  std::string m = std::string("the output ") + what + " " + shape_str(result.output.shape) + " hold ";
  std::string parts;
  auto add = [&parts](int64_t n, const char* name) {
    if (n) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  };
  add(c.nan, "NaN");
  add(c.pos_inf, "+Inf");
  add(c.neg_inf, "-Inf");
  m += parts + " of " + std::to_string(result.output.numel()) + " values (the first at " +
       index_str(result.output.shape, c.first) +
       "): float32 overflowed in the forward, so predictions from them are meaningless "
       "(are the weights far too large?)";
  return {m};
}

}  // namespace atlas
