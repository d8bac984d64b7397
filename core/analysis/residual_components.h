#pragma once
// What direct logit attribution (logit_attribution.h) and the QK decomposition
// (qk_decomposition.h) both read of a pre-norm residual stream: the run's activations by layer
// (each attention sub-layer's heads before W^O, each layer's input and output, through the
// activation hooks), the parameters as double, the divisor a norm applied to a row, and what
// the embeddings hold of absolute positions.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace atlas {

// Row r of a [rows, cols] weight as double (a packed one converted row by row).
std::vector<double> residual_weight_row(const Tensor& t, int64_t r);
// A 1-D parameter (norm gains, biases) as double.
std::vector<double> residual_param_vector(const Tensor& t);
// An optional bias (zeros of `size` when the model has none).
std::vector<double> residual_optional_vector(const ParamStore& p, const std::string& name, int64_t size);
// Row `row` of x [L, d] dotted with e (accumulated in double).
double residual_dot_row(const Tensor& x, int64_t row, const std::vector<double>& e);
// The divisor the config's norm applied to row i of x [L, d], recomputed in double: sigma
// (LayerNorm), rms (RMSNorm) or |x| (ScaleNorm).
double residual_norm_scale(const ModelConfig& c, const Tensor& x, int64_t i);
// What the embeddings hold of absolute positions at rows 0..L-1 [L, d] (zero where positions act
// on queries and keys, or where an embedding norm mixes them with the tokens).
Tensor residual_position_rows(const ModelConfig& c, const ParamStore& p, int64_t L);

// The activations the hooks saw, by layer of the model's one stream (the decoder of a
// decoder-only model, else the encoder).
struct ResidualCapture {
  std::string stack;  // "decoder" or "encoder"
  std::string sub;    // the self-attention's name in a layer: "self_attn" or "attn"
  int64_t layers = 0;
  std::map<std::string, int64_t> layer_of;    // "decoder.layer3" -> 3
  std::map<std::string, int64_t> heads_of;    // "decoder.layer3.self_attn" -> 3
  std::vector<Tensor> heads, input, output;   // [L, H*dh], [L, d], [L, d] per layer

  // "decoder.layer3.self_attn"
  std::string attention_prefix(int64_t l) const { return stack + ".layer" + std::to_string(l) + "." + sub; }
};

// Runs `model` on `source` with hooks that record every layer (options.trace as given; no prefix
// cache) and returns the run; throws AtlasError when a layer was not seen.
RunResult run_capturing_residual(const Model& model, const std::vector<TokenInfo>& source, RunOptions options,
                                 ResidualCapture& cap);

}  // namespace atlas
