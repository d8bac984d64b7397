// The shared reading of a pre-norm residual stream (residual_components.h).
#include "core/analysis/residual_components.h"

#include <algorithm>
#include <cmath>

#include "core/formats/packed_weights.h"
#include "core/model/positional.h"
#include "core/tensor/error.h"

namespace atlas {

std::vector<double> residual_weight_row(const Tensor& t, int64_t r) {
  const int64_t cols = t.shape.back();
  std::vector<double> out(static_cast<size_t>(cols));
  if (t.packed) {
    std::vector<float> row(static_cast<size_t>(cols));
    dequantize_rows(*t.packed, r, 1, row.data());
    for (int64_t k = 0; k < cols; ++k) out[size_t(k)] = row[size_t(k)];
  } else {
    for (int64_t k = 0; k < cols; ++k) out[size_t(k)] = t.data[size_t(r * cols + k)];
  }
  return out;
}

std::vector<double> residual_param_vector(const Tensor& t) {
  const Tensor f = to_float(t);
  return std::vector<double>(f.data.begin(), f.data.end());
}

std::vector<double> residual_optional_vector(const ParamStore& p, const std::string& name, int64_t size) {
  auto it = p.find(name);
  return it == p.end() ? std::vector<double>(size_t(size), 0.0) : residual_param_vector(it->second);
}

double residual_dot_row(const Tensor& x, int64_t row, const std::vector<double>& e) {
  const int64_t d = int64_t(e.size());
  double s = 0;
  for (int64_t k = 0; k < d; ++k) s += double(x.data[size_t(row * d + k)]) * e[size_t(k)];
  return s;
}

double residual_norm_scale(const ModelConfig& c, const Tensor& x, int64_t i) {
  const int64_t d = x.shape[1];
  double sum = 0, sq = 0;
  for (int64_t k = 0; k < d; ++k) {
    const double v = x.data[size_t(i * d + k)];
    sum += v;
    sq += v * v;
  }
  if (c.norm == NormKind::LayerNorm) {
    const double mean = sum / double(d);
    double var = 0;
    for (int64_t k = 0; k < d; ++k) {
      const double v = x.data[size_t(i * d + k)] - mean;
      var += v * v;
    }
    return std::sqrt(var / double(d) + double(c.norm_eps));
  }
  if (c.norm == NormKind::RmsNorm) return std::sqrt(sq / double(d) + double(c.norm_eps));
  return std::max(std::sqrt(sq), double(c.norm_eps));
}

Tensor residual_position_rows(const ModelConfig& c, const ParamStore& p, int64_t L) {
  if (c.embeddings.norm || (c.positional != Positional::Sinusoidal && c.positional != Positional::Learned))
    return Tensor({L, c.d_model});
  if (c.positional == Positional::Sinusoidal) return sinusoid_table(L, c.d_model, c.sinusoid_layout, 0);
  Tensor out({L, c.d_model});
  for (int64_t i = 0; i < L; ++i) {
    const std::vector<double> row = residual_weight_row(p.at("embed.positions"), i);
    for (int64_t k = 0; k < c.d_model; ++k) out.data[size_t(i * c.d_model + k)] = float(row[size_t(k)]);
  }
  return out;
}

RunResult run_capturing_residual(const Model& model, const std::vector<TokenInfo>& source, RunOptions options,
                                 ResidualCapture& cap) {
  const ModelConfig& c = model.config();
  cap.stack = c.has_decoder() ? "decoder" : "encoder";
  cap.sub = c.has_decoder() ? "self_attn" : "attn";
  cap.layers = c.has_decoder() ? c.decoder_layers() : c.n_layers;
  cap.heads.assign(size_t(cap.layers), Tensor());
  cap.input.assign(size_t(cap.layers), Tensor());
  cap.output.assign(size_t(cap.layers), Tensor());
  cap.layer_of.clear();
  cap.heads_of.clear();
  for (int64_t l = 0; l < cap.layers; ++l) {
    const std::string name = cap.stack + ".layer" + std::to_string(l);
    cap.layer_of[name] = l;
    cap.heads_of[name + "." + cap.sub] = l;
  }
  options.prefix_cache = nullptr;
  options.hooks.heads = [&cap](const std::string& prefix, Tensor& heads) {
    if (auto it = cap.heads_of.find(prefix); it != cap.heads_of.end()) cap.heads[size_t(it->second)] = heads;
  };
  options.hooks.layer = [&cap](const std::string& layer, const Tensor& input, Tensor& output) {
    if (auto it = cap.layer_of.find(layer); it != cap.layer_of.end()) {
      cap.input[size_t(it->second)] = input;
      cap.output[size_t(it->second)] = output;
    }
  };
  RunResult run = model.forward(source, {}, options);
  for (int64_t l = 0; l < cap.layers; ++l)
    if (cap.heads[size_t(l)].data.empty() || cap.output[size_t(l)].data.empty())
      throw AtlasError("internal: layer " + std::to_string(l) + " was not seen by the activation hooks");
  return run;
}

}  // namespace atlas
